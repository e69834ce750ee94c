package lapisproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// BinEnv names the environment variable that holds a prebuilt lapis binary to test instead of
// building ./cmd/lapis.
const BinEnv = "LAPIS_BIN"

// Build returns the lapis binary to test: the value of the first of envs, then BinEnv, that is
// set; else ./cmd/lapis of this module, built into a temporary directory (the go command's
// output goes to stderr). cleanup removes what Build made.
func Build(ctx context.Context, envs ...string) (bin string, cleanup func(), err error) {
	for _, env := range append(envs[:len(envs):len(envs)], BinEnv) {
		if bin := os.Getenv(env); bin != "" {
			return bin, func() {}, nil // built elsewhere, e.g. from an older commit
		}
	}
	root, err := moduleRoot()
	if err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp("", "lapis-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { _ = os.RemoveAll(tmp) }
	bin = filepath.Join(tmp, "lapis")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/lapis")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building lapis: %w", err)
	}
	return bin, cleanup, nil
}

// Main is TestMain's body: it gets the binary (Build, with envs), calls run with its path and
// removes what it built afterwards. It returns run's exit code, or 1 when the build failed
// (saying why on stderr).
func Main(ctx context.Context, run func(bin string) int, envs ...string) int {
	bin, cleanup, err := Build(ctx, envs...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer cleanup()
	return run(bin)
}

// moduleRoot is the directory of this module's go.mod, found upwards from this file so that it
// does not depend on how deep the package sits.
func moduleRoot() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	for dir := filepath.Dir(file); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod above %s", file)
		}
	}
}

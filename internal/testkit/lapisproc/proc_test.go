package lapisproc

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeLapis is a stand-in for `lapis serve --data-dir DIR ...`: it runs before, then writes a
// kubeconfig into DIR as lapis does (atomically) and waits, running onTerm on SIGTERM. Like lapis,
// it handles SIGTERM before its kubeconfig says it is ready: a test may stop it at once.
func fakeLapis(t *testing.T, before, onTerm string) string {
	t.Helper()
	script := `#!/bin/sh
dir=$3
echo "fake lapis $*"
` + before + `
trap '` + onTerm + `' TERM
cat > "$dir/kubeconfig.tmp" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:$$", certificate-authority-data: Y2E=}}]
users: [{name: u, user: {token: tok}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
EOF
mv "$dir/kubeconfig.tmp" "$dir/kubeconfig"
while :; do sleep 0.02; done
`
	bin := filepath.Join(t.TempDir(), "lapis")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

func TestProc(t *testing.T) {
	for _, tc := range []struct {
		name, before, onTerm string
		startErr, stopErr    string // wanted in the error; "" for none
	}{
		{name: "serves and stops", onTerm: "exit 0"},
		{name: "exits before its kubeconfig", before: "echo boom; exit 3", startErr: "lapis exited before writing"},
		{name: "exits uncleanly on SIGTERM", onTerm: "exit 2", stopErr: "lapis exited uncleanly after SIGTERM: exit status 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(Options{Bin: fakeLapis(t, tc.before, tc.onTerm), DataDir: t.TempDir(), Flags: []string{"--flag"}})
			defer p.Close()
			err := p.Start(t.Context())
			if tc.startErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.startErr) || !strings.Contains(err.Error(), "boom") {
					t.Fatalf("Start: %v, want an error saying %q with the log", err, tc.startErr)
				}
				if p.Running() || p.ExitErr() == nil {
					t.Errorf("after a failed start: running %v, exit error %v", p.Running(), p.ExitErr())
				}
				return
			}
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			pid := p.Process().Pid
			if got := p.Server(); got != "https://127.0.0.1:"+strconv.Itoa(pid) {
				t.Errorf("Server() = %q, want the kubeconfig's, of pid %d", got, pid)
			}
			if p.Token() != "tok" || string(p.CAData()) != "ca" || !p.Running() {
				t.Errorf("token %q, CA %q, running %v", p.Token(), p.CAData(), p.Running())
			}
			wantLog := "--- lapis serve --data-dir " + p.DataDir() + " --listen 127.0.0.1:0 --flag\nfake lapis serve"
			if !strings.Contains(p.Log().String(), wantLog) {
				t.Errorf("log %q, want it to contain %q", p.Log().String(), wantLog)
			}

			// Restart waits for a new kubeconfig and reads the new server from it.
			err = p.Restart(t.Context())
			if tc.stopErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.stopErr) {
					t.Fatalf("Restart: %v, want %q", err, tc.stopErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Restart: %v", err)
			}
			if pid2 := p.Process().Pid; pid2 == pid || p.Server() != "https://127.0.0.1:"+strconv.Itoa(pid2) {
				t.Errorf("after a restart: pid %d (was %d), server %s", pid2, pid, p.Server())
			}

			p.Kill()
			if p.Running() || p.ExitErr() == nil || !strings.Contains(p.ExitErr().Error(), "killed") {
				t.Errorf("after Kill: running %v, exit error %v", p.Running(), p.ExitErr())
			}
			if err := p.Start(t.Context()); err != nil {
				t.Fatalf("Start after Kill: %v", err)
			}
			if err := p.Stop(t.Context()); err != nil || p.Running() || p.ExitErr() != nil {
				t.Errorf("Stop: %v; running %v, exit error %v", err, p.Running(), p.ExitErr())
			}
		})
	}
}

// A process that ignores SIGTERM: Stop gives up after StopTimeout (the context here), Close
// kills it.
func TestProcIgnoringSIGTERM(t *testing.T) {
	p := New(Options{Bin: fakeLapis(t, "", ""), DataDir: t.TempDir()})
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := p.Stop(ctx); err == nil || !p.Running() {
		t.Fatalf("Stop of a process ignoring SIGTERM: %v, running %v", err, p.Running())
	}
	p.Kill()
	if p.Running() {
		t.Fatal("running after Kill")
	}
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abcdef", 0, "abcdef"},
		{"abcdef", 6, "abcdef"},
		{"abcdef", 10, "abcdef"},
		{"abcdef", 2, "…ef"},
	} {
		if got := Tail(tc.s, tc.n); got != tc.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestBuildHonoursEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		envs    []string
		wantBin string
	}{
		{"LAPIS_BIN", map[string]string{BinEnv: "/a"}, nil, "/a"},
		{"the caller's variable first", map[string]string{BinEnv: "/a", "LAPIS_HARDENING_BIN": "/h"}, []string{"LAPIS_HARDENING_BIN"}, "/h"},
		{"LAPIS_BIN when the caller's is unset", map[string]string{BinEnv: "/a"}, []string{"LAPIS_HARDENING_BIN"}, "/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(BinEnv, "")
			t.Setenv("LAPIS_HARDENING_BIN", "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			bin, cleanup, err := Build(t.Context(), tc.envs...)
			if err != nil || bin != tc.wantBin {
				t.Fatalf("Build = %q, %v; want %q", bin, err, tc.wantBin)
			}
			cleanup()
		})
	}
}

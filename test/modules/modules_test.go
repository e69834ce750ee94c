package modules

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// nested are the modules inside the repository whose tests belong to lapis's (the envtest test
// project is run by test/envtest, against lapis's binaries).
var nested = []string{"lapistest"}

func TestNestedModules(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range nested {
		t.Run(dir, func(t *testing.T) {
			for _, args := range [][]string{{"vet", "./..."}, {"test", "./...", "-count=1", "-timeout", "10m"}} {
				cmd := exec.Command("go", args...)
				cmd.Dir = filepath.Join(root, dir)
				cmd.Env = append(os.Environ(), "GOFLAGS=") // the nested module's own go.mod decides
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("go %v in %s: %v\n%s", args, dir, err, out)
				}
				t.Logf("go %v in %s:\n%s", args, dir, out)
			}
		})
	}
}

package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestCleanupStack(t *testing.T) {
	for _, c := range []struct {
		name    string
		fail    map[string]bool // steps whose undo fails
		wantErr []string
	}{
		{"all undone", nil, nil},
		{"a failing step does not stop the others", map[string]bool{"storage": true}, []string{"storage"}},
		{"every failure is returned", map[string]bool{"storage": true, "audit": true}, []string{"audit", "storage"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stack cleanupStack
			var undone []string
			for _, name := range []string{"lock", "storage", "audit", "serving"} {
				stack.push(name, func(context.Context) error {
					undone = append(undone, name)
					if c.fail[name] {
						return errors.New(name)
					}
					return nil
				})
			}
			err := stack.run(context.Background())
			if want := []string{"serving", "audit", "storage", "lock"}; !reflect.DeepEqual(undone, want) {
				t.Errorf("undone %v, want %v (last pushed first)", undone, want)
			}
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if !reflect.DeepEqual(got, c.wantErr) {
				t.Errorf("error %v, want %v", got, c.wantErr)
			}
			// Undone once: a second run (Shutdown after a failed start) has nothing to do.
			undone = nil
			if err := stack.run(context.Background()); err != nil || len(undone) != 0 || len(stack.names()) != 0 {
				t.Errorf("second run: %v, undid %v", err, undone)
			}
		})
	}
}

func TestStartPhases(t *testing.T) {
	var names []string
	for _, p := range (&startup{}).phases() {
		names = append(names, p.name)
	}
	if want := []string{"storage", "identity", "objects", "controllers", "serving", "post-start", "ready"}; !reflect.DeepEqual(names, want) {
		t.Errorf("phases %v, want %v", names, want)
	}
}

// TestFailedStartUndoes: a start that fails part-way (its address is taken, once etcd has
// started opening) undoes what it did: no kubeconfig, etcd closed and the data directory
// unlocked, so that the next start on it succeeds.
func TestFailedStartUndoes(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := filepath.Join(t.TempDir(), "data")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if s, err := Start(context.Background(), Config{DataDir: dir, Listen: taken.Addr().String()}, log); err == nil {
		s.Shutdown(context.Background())
		t.Fatal("started on an address in use")
	} else if !strings.Contains(err.Error(), "listening on") {
		t.Fatalf("start on an address in use: %v", err)
	}
	if _, err := os.Stat(KubeconfigPath(dir)); !os.IsNotExist(err) {
		t.Errorf("kubeconfig after a failed start: %v", err)
	}
	s, err := Start(context.Background(), Config{DataDir: dir, Listen: "127.0.0.1:0"}, log)
	if err != nil {
		t.Fatalf("start after a failed one: %v", err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

package inprocess

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/lapis-dev/lapis/internal/server"
)

// Lapis is a lapis serving on loopback from a temporary data directory.
type Lapis struct {
	// Kubeconfig is the path of its admin kubeconfig.
	Kubeconfig string
	srv        *server.Server
	dir        string
}

// Start serves lapis from a new temporary directory named after prefix, its log discarded.
func Start(ctx context.Context, prefix string) (*Lapis, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "lapis")
	srv, err := server.Start(ctx, server.Config{DataDir: data, Listen: "127.0.0.1:0"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting lapis: %w", err)
	}
	return &Lapis{Kubeconfig: server.KubeconfigPath(data), srv: srv, dir: dir}, nil
}

// Dir is a temporary directory the caller may use beside lapis's data; Stop removes it.
func (l *Lapis) Dir() string { return l.dir }

// Stop shuts lapis down and removes its directory.
func (l *Lapis) Stop() {
	_ = l.srv.Shutdown(context.Background())
	os.RemoveAll(l.dir)
}

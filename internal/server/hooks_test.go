package server

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/lapis-dev/lapis/internal/aggregator"
	"github.com/lapis-dev/lapis/internal/healthz"
)

// TestPostStartHooks: a hook's check fails ("not finished", the reason kube gives) until its
// work has succeeded, then passes; /readyz lists it by kube's name.
func TestPostStartHooks(t *testing.T) {
	hooks := newPostStartHooks([]string{"rbac/bootstrap-roles", "bootstrap-controller"})
	health := healthz.Endpoints{"/readyz": hooks.checks()}
	get := func(path string) (int, string) {
		req := httptest.NewRequest("GET", path, nil)
		h, ok := health.Handler(req.URL.Path)
		if !ok {
			t.Fatalf("%s not served", path)
		}
		w := httptest.NewRecorder()
		h(w, req)
		return w.Code, w.Body.String()
	}
	for _, step := range []struct {
		name     string
		do       func()
		verbose  string
		rbacCode int
		rbacBody string
	}{
		{"none finished", func() {}, "[-]poststarthook/rbac/bootstrap-roles failed: reason withheld\n[-]poststarthook/bootstrap-controller failed: reason withheld\nreadyz check failed\n",
			500, "internal server error: not finished\n"},
		{"a failed run does not finish", func() {
			if err := hooks.run(context.Background(), "rbac/bootstrap-roles", func(context.Context) error { return errors.New("disk full") }); err == nil {
				t.Error("the hook's error was not returned")
			}
		}, "[-]poststarthook/rbac/bootstrap-roles failed: reason withheld\n[-]poststarthook/bootstrap-controller failed: reason withheld\nreadyz check failed\n",
			500, "internal server error: not finished\n"},
		{"a successful run finishes", func() {
			_ = hooks.run(context.Background(), "rbac/bootstrap-roles", func(context.Context) error { return nil })
		}, "[+]poststarthook/rbac/bootstrap-roles ok\n[-]poststarthook/bootstrap-controller failed: reason withheld\nreadyz check failed\n",
			200, "ok"},
		{"finished twice, and all", func() { hooks.Finish("bootstrap-controller", "rbac/bootstrap-roles", "not-a-hook") },
			"[+]poststarthook/rbac/bootstrap-roles ok\n[+]poststarthook/bootstrap-controller ok\nreadyz check passed\n", 200, "ok"},
	} {
		step.do()
		if code, body := get("/readyz?verbose"); body != step.verbose {
			t.Errorf("%s: /readyz?verbose: %d %q, want %q", step.name, code, body, step.verbose)
		}
		if code, body := get("/readyz/poststarthook/rbac/bootstrap-roles"); code != step.rbacCode || body != step.rbacBody {
			t.Errorf("%s: one hook's check: %d %q, want %d %q", step.name, code, body, step.rbacCode, step.rbacBody)
		}
	}
}

// Each hook lapis names is listed once.
func TestKubeHookOrder(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range kubeHookOrder {
		if seen[name] {
			t.Errorf("%s listed twice", name)
		}
		seen[name] = true
	}
	if len(seen) != 25 {
		t.Errorf("%d hooks and checks, want the 24 hooks lapis runs and autoregister-completion", len(seen))
	}
}

// kube lists its proxy certificate's reload hook, before the aggregator's, only when the
// certificate's files are given.
func TestKubeHooksWithProxyCertificate(t *testing.T) {
	if slices.Contains(kubeHooks(Config{}), hookReloadProxyClientCert) {
		t.Error("the reload hook is listed without --proxy-client-cert-file")
	}
	hooks := kubeHooks(Config{ProxyClientCertFile: "c", ProxyClientKeyFile: "k"})
	i := slices.Index(hooks, hookReloadProxyClientCert)
	if i < 0 || hooks[i+1] != aggregator.HookInformers || len(hooks) != len(kubeHookOrder)+1 {
		t.Errorf("with the certificate's files: %v", hooks)
	}
}

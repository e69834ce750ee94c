package objects

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/lapis-dev/lapis/internal/storage"
)

func TestMigrateKeys(t *testing.T) {
	ctx := context.Background()
	b, err := storage.OpenEmbedded(ctx, t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	store := storage.NewStore(b.Client)
	rs := builtinCatalog().Stored()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	// old key → the key it must end at; kube-layout keys already there stay.
	moves := map[string]string{
		"/registry/apps/deployments/default/web":                                 "/registry/deployments/default/web",
		"/registry/services/default/web":                                         "/registry/services/specs/default/web",
		"/registry/services/specs/x":                                             "/registry/services/specs/specs/x", // namespace "specs"
		"/registry/endpoints/default/web":                                        "/registry/services/endpoints/default/web",
		"/registry/nodes/n1":                                                     "/registry/minions/n1",
		"/registry/replicationcontrollers/default/rc":                            "/registry/controllers/default/rc",
		"/registry/networking.k8s.io/ingresses/default/in":                       "/registry/ingress/default/in",
		"/registry/rbac.authorization.k8s.io/clusterroles/admin":                 "/registry/clusterroles/admin",
		"/registry/coordination.k8s.io/leases/kube-system/l":                     "/registry/leases/kube-system/l",
		"/registry/configmaps/default/c":                                         "/registry/configmaps/default/c",
		"/registry/events/default/e":                                             "/registry/events/default/e",
		"/registry/example.com/widgets/default/w":                                "/registry/example.com/widgets/default/w",
		"/registry/services/specs/default/already":                               "/registry/services/specs/default/already",
		"/registry/services/endpoints/default/already":                           "/registry/services/endpoints/default/already",
		"/registry/apiextensions.k8s.io/customresourcedefinitions/w.example.com": "/registry/apiextensions.k8s.io/customresourcedefinitions/w.example.com",
	}
	for from := range moves {
		if _, err := store.Create(ctx, from, []byte(from)); err != nil {
			t.Fatal(err)
		}
	}
	// Another server's keys, below another etcd prefix, are not this server's to move.
	other := "/tenant-b/apps/deployments/default/web"
	if _, err := store.Create(ctx, other, []byte(other)); err != nil {
		t.Fatal(err)
	}
	// An old key whose new key is taken stays, as does what is at the new key.
	if _, err := store.Create(ctx, "/registry/apps/deployments/default/taken", []byte("old")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Create(ctx, "/registry/deployments/default/taken", []byte("new")); err != nil {
		t.Fatal(err)
	}

	for run := 1; run <= 2; run++ { // the second run finds nothing to do
		if err := MigrateKeys(ctx, store, NewKeys(DefaultPrefix), rs, log); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		all, err := store.List(ctx, "/", storage.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, kv := range all.Items {
			got[kv.Key] = string(kv.Value)
		}
		want := map[string]string{
			"/registry/apps/deployments/default/taken": "old",
			"/registry/deployments/default/taken":      "new",
			other:                                      other,
		}
		for from, to := range moves {
			want[to] = from // the value written at the old key
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("run %d: %s = %q, want %q", run, k, got[k], v)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("run %d: unexpected key %s", run, k)
			}
		}
	}
}

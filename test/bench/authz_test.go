package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lapis-dev/lapis/internal/server"
)

// BenchmarkAuthorization measures what authorization costs a user who is not system:masters
// (whom every mode lets through at once): the same gets and server-side applies of ConfigMaps,
// by a user from a token file bound to the `edit` role in its namespace, against a lapis with
// --authorization-mode=RBAC (among 100 other users' bindings) and one with AlwaysAllow. Issue 9
// asks that RBAC cost at most 10% of either's throughput; compare the ops/s of the two modes.
func BenchmarkAuthorization(b *testing.B) {
	for _, mode := range []string{"AlwaysAllow", "RBAC"} {
		b.Run(mode, func(b *testing.B) {
			cs := startAuthzTarget(b, mode)
			ctx := context.Background()
			cms := cs.CoreV1().ConfigMaps("bench")
			if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "read-me"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				b.Fatal(err)
			}
			b.Run("get", func(b *testing.B) {
				b.SetParallelism(4) // 4 × GOMAXPROCS clients
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := cms.Get(ctx, "read-me", metav1.GetOptions{}); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			})
			b.Run("apply", func(b *testing.B) {
				var next atomic.Int64
				b.SetParallelism(4)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						i := next.Add(1)
						body := fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d"},"data":{"gen":"%d"}}`, i%64, i)
						err := cs.CoreV1().RESTClient().Patch(types.ApplyPatchType).Namespace("bench").Resource("configmaps").
							Name(fmt.Sprintf("cm-%d", i%64)).Param("fieldManager", "bench").Param("force", "true").Body(body).Do(ctx).Error()
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
			})
		})
	}
}

// startAuthzTarget starts an in-process lapis in the given authorization mode and returns a
// client of the token-file user "bench-user", who may edit namespace bench.
func startAuthzTarget(b *testing.B, mode string) kubernetes.Interface {
	b.Helper()
	dir := b.TempDir()
	const token = "bench-user-token-0123456789"
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+",bench-user,1001\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	data := filepath.Join(dir, "data")
	srv, err := server.Start(ctx, server.Config{DataDir: data, Listen: "127.0.0.1:0", AuthorizationModes: []string{mode},
		TokenAuthFile: tokens}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatalf("starting lapis: %v", err)
	}
	b.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	})
	adminCfg, err := clientcmd.BuildConfigFromFlags("", server.KubeconfigPath(data))
	if err != nil {
		b.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(adminCfg)
	if err := ensureNS(ctx, admin, "bench"); err != nil {
		b.Fatal(err)
	}
	binding := func(name, user string) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
	}
	for i := 0; i < 100; i++ {
		if _, err := admin.RbacV1().RoleBindings("bench").Create(ctx, binding(fmt.Sprintf("other-%d", i), fmt.Sprintf("other-%d", i)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := admin.RbacV1().RoleBindings("bench").Create(ctx, binding("bench-user", "bench-user"), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	userCfg := rest.AnonymousClientConfig(adminCfg)
	userCfg.BearerToken = token
	userCfg.QPS, userCfg.Burst = -1, 0
	cs := kubernetes.NewForConfigOrDie(userCfg)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := cs.CoreV1().ConfigMaps("bench").List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return cs
		}
		if time.Now().After(deadline) {
			b.Fatalf("bench-user cannot list ConfigMaps: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

package authn

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// tokenWebhook is a stand-in TokenReview webhook: "good" is alice, anything else is refused;
// it counts the reviews it was asked.
func tokenWebhook(t *testing.T) (kubeconfig string, reviews *atomic.Int32) {
	reviews = &atomic.Int32{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reviews.Add(1)
		var review authenticationv1.TokenReview
		_ = json.NewDecoder(r.Body).Decode(&review)
		review.Status = authenticationv1.TokenReviewStatus{Authenticated: review.Spec.Token == "good"}
		if review.Status.Authenticated {
			review.Status.User = authenticationv1.UserInfo{Username: "alice", UID: "a-1", Groups: []string{"webhook-users"}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(srv.Close)
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	kubeconfig = filepath.Join(t.TempDir(), "webhook.kubeconfig")
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: webhook, cluster: {server: %q, certificate-authority-data: %q}}]
users: [{name: lapis, user: {}}]
contexts: [{name: webhook, context: {cluster: webhook, user: lapis}}]
current-context: webhook
`, srv.URL, ca)
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, reviews
}

// TestTokenWebhook: a token nothing else knows is asked of the webhook (kube's TokenReview, v1
// and v1beta1), whose user is taken with system:authenticated; a refused token is
// unauthenticated; answers are remembered for the cache TTL.
func TestTokenWebhook(t *testing.T) {
	for _, version := range []string{"v1", "v1beta1"} {
		t.Run(version, func(t *testing.T) {
			kubeconfig, reviews := tokenWebhook(t)
			a, err := build(Config{ServiceAccounts: ServiceAccountConfig{DataDir: t.TempDir()},
				TokenWebhook: TokenWebhookConfig{ConfigFile: kubeconfig, Version: version, CacheTTL: time.Minute}}, 0)
			if err != nil {
				t.Fatal(err)
			}
			resp, ok, err := a.AuthenticateToken(context.Background(), "good")
			if err != nil || !ok || resp.User.GetName() != "alice" || resp.User.GetUID() != "a-1" ||
				fmt.Sprint(resp.User.GetGroups()) != "[webhook-users system:authenticated]" {
				t.Fatalf("good token: %+v %v %v", resp, ok, err)
			}
			if _, ok, _ := a.AuthenticateToken(context.Background(), "bad"); ok {
				t.Error("a token the webhook refused authenticated")
			}
			asked := reviews.Load()
			_, _, _ = a.AuthenticateToken(context.Background(), "good")
			_, _, _ = a.AuthenticateToken(context.Background(), "bad")
			if reviews.Load() != asked {
				t.Errorf("the webhook was asked again within the cache TTL (%d, then %d reviews)", asked, reviews.Load())
			}
		})
	}
}

// TestTokenWebhookConfig: a kubeconfig that cannot be read or a version kube does not know
// refuses to start, naming the flag.
func TestTokenWebhookConfig(t *testing.T) {
	kubeconfig, _ := tokenWebhook(t)
	for _, cfg := range []TokenWebhookConfig{{ConfigFile: "/nonexistent", Version: "v1"}, {ConfigFile: kubeconfig, Version: "v2"}} {
		if _, err := build(Config{ServiceAccounts: ServiceAccountConfig{DataDir: t.TempDir()}, TokenWebhook: cfg}, 0); err == nil {
			t.Errorf("%+v: started", cfg)
		}
	}
}

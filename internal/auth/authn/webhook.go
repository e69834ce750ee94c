package authn

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/webhook"
)

// webhookRetryBackoff is kube's DefaultAuthWebhookRetryBackoff.
func webhookRetryBackoff() wait.Backoff {
	return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// newTokenWebhook is kube-apiserver's webhook token authenticator
// (pkg/kubeapiserver/authenticator newWebhookTokenAuthenticator): TokenReviews sent to the
// webhook the kubeconfig names, its answers (allowed and denied alike) cached for the TTL.
func newTokenWebhook(cfg TokenWebhookConfig, audiences authenticator.Audiences) (authenticator.Token, error) {
	clientConfig, err := webhookutil.LoadKubeconfig(cfg.ConfigFile, nil)
	if err != nil {
		return nil, fmt.Errorf("--authentication-token-webhook-config-file: %w", err)
	}
	w, err := webhook.New(clientConfig, cfg.Version, audiences, webhookRetryBackoff())
	if err != nil {
		return nil, fmt.Errorf("--authentication-token-webhook-version: %w", err)
	}
	return tokencache.New(w, false, cfg.CacheTTL, cfg.CacheTTL), nil
}

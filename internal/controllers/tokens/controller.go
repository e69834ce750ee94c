package tokens

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	sacontroller "k8s.io/kubernetes/pkg/controller/serviceaccount"
	"k8s.io/kubernetes/pkg/serviceaccount"
)

// workers is kube-controller-manager's --concurrent-serviceaccount-token-syncs default.
const workers = 5

// Run fills token Secrets until ctx ends, with tokens of generator (authn's
// LegacyTokenGenerator) and rootCA as their ca.crt. client writes as the controller (its user
// agent names the field manager); factory's ServiceAccount and Secret informers are started
// here (kube's logger comes from ctx: klog.NewContext).
func Run(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory, generator serviceaccount.TokenGenerator, rootCA []byte) error {
	c, err := sacontroller.NewTokensController(klog.FromContext(ctx), factory.Core().V1().ServiceAccounts(), factory.Core().V1().Secrets(), client,
		sacontroller.TokensControllerOptions{TokenGenerator: generator, RootCA: rootCA})
	if err != nil {
		return fmt.Errorf("tokens controller: %w", err)
	}
	factory.Start(ctx.Done())
	c.Run(ctx, workers)
	return nil
}

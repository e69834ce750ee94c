package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	lapisadmission "github.com/lapis-dev/lapis/internal/admission"
	"github.com/lapis-dev/lapis/internal/auth/authz"
	"github.com/lapis-dev/lapis/internal/pki"
)

// loopback is what kube-apiserver's admission plugins read through: informers over a client of
// this server itself (kube-apiserver's loopback client), as system:apiserver.
type loopback struct {
	chain   atomic.Pointer[admission.Interface]
	factory informers.SharedInformerFactory
	config  *rest.Config // for lapis's controllers that are kube's (the quota controller)
	client  kubernetes.Interface
	// authz is the request path's authorizer, over the factory's RBAC informers.
	authz atomic.Pointer[authz.Authorizer]
}

// chainOrNil is the admission chain once built; nil before.
func (l *loopback) chainOrNil() admission.Interface {
	if c := l.chain.Load(); c != nil {
		return *c
	}
	return nil
}

// connect makes the loopback client and the informer factory of a server listening at addr,
// reached with tlsConfig (the loopback certificate's, servingTLS) as system:apiserver (the
// process's loopback token), so that its requests are not taken for the admin's in audit logs.
func (l *loopback) connect(addr net.Addr, creds *pki.Credentials, tlsConfig rest.TLSClientConfig) error {
	cfg := &rest.Config{
		Host:            "https://" + addr.String(),
		BearerToken:     creds.LoopbackToken,
		TLSClientConfig: tlsConfig,
		ContentConfig:   rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"},
		UserAgent:       loopbackUserAgent,
		WarningHandler:  rest.NoWarnings{}, // deprecation warnings are for users, not for lapis's own reads
		QPS:             -1,
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("loopback client: %w", err)
	}
	l.config, l.client = cfg, client
	l.factory = informers.NewSharedInformerFactory(client, 0)
	return nil
}

// registerPolicyInformers adds to the factory, before start, the informers kube's admission
// policy plugins check when they are built (their policies, bindings and the namespaces), for
// those of the plugins that run: built once these have synced, the plugins are ready at once.
func (l *loopback) registerPolicyInformers(enabled, disabled []string) {
	l.factory.Core().V1().Namespaces().Informer()
	policies := l.factory.Admissionregistration().V1()
	if lapisadmission.Runs("ValidatingAdmissionPolicy", enabled, disabled) {
		policies.ValidatingAdmissionPolicies().Informer()
		policies.ValidatingAdmissionPolicyBindings().Informer()
	}
	if lapisadmission.Runs("MutatingAdmissionPolicy", enabled, disabled) {
		policies.MutatingAdmissionPolicies().Informer()
		policies.MutatingAdmissionPolicyBindings().Informer()
	}
}

// buildChain makes the admission chain of the plugins enabled and disabled leave on, whose
// webhooks reach services through services; its informers start with start. Writes go through
// it once useChain is called. The plugins' requests for OpenAPI documents wait until ready is
// closed (holdOpenAPI).
func (l *loopback) buildChain(authz authorizer.Authorizer, services webhook.ServiceResolver, enabled, disabled []string, stop, ready <-chan struct{}) (chain admission.Interface, err error) {
	// kube's webhook plugins register handlers on the informers as they are built and fail on a
	// nil registration when the informers have stopped: a lapis stopped while starting (SIGTERM
	// at the wrong moment) ends its start with an error instead.
	defer func() {
		if p := recover(); p != nil {
			select {
			case <-stop:
				chain, err = nil, errors.New("stopped while the admission chain was built")
			default:
				panic(p)
			}
		}
	}()
	select {
	case <-stop:
		return nil, errors.New("stopped before the admission chain was built")
	default:
	}
	cfg := rest.CopyConfig(l.config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return holdOpenAPI{next: rt, ready: ready, stopped: stop}
	})
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("admission's loopback client: %w", err)
	}
	return lapisadmission.New(lapisadmission.Options{Loopback: l.config, Client: client, Factory: l.factory,
		Authorizer: authz, ServiceResolver: services, Stop: stop, Enabled: enabled, Disabled: disabled})
}

// useChain admits writes with chain from now on. lapis's own first writes (the system
// namespaces, the CustomResourceDefinitions' catalogue) come before any chain: its plugins wait
// for informers of a server not serving yet.
func (l *loopback) useChain(chain admission.Interface) { l.chain.Store(&chain) }

// start runs the informers not running yet and waits until all hold the server's state.
func (l *loopback) start(ctx context.Context) error {
	l.factory.Start(ctx.Done())
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for typ, synced := range l.factory.WaitForCacheSync(wait.Done()) {
		if !synced {
			return fmt.Errorf("admission informer for %v did not sync", typ)
		}
	}
	return nil
}

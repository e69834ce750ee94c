package server

import (
	"context"
	"errors"
	"sync"

	"k8s.io/apiserver/pkg/admission"
)

// admissionGate stands in for the admission chain until it is built: writes wait for it, then
// go through it. lapis builds the chain once the loopback informers of kube's admission
// policies have synced: the policy plugins check their informers when built and then only
// every 100 ms, and each write waits for them in steps of 100 ms too, so a chain built before
// its informers have synced holds the first writes (the RBAC policy, the kubernetes Service)
// up to 200 ms longer.
type admissionGate struct {
	once  sync.Once
	open  chan struct{}
	chain admission.Interface // once open: the chain, nil when it could not be built
}

func newAdmissionGate() *admissionGate { return &admissionGate{open: make(chan struct{})} }

// use lets the writes waiting, and those to come, through chain; nil refuses them.
func (g *admissionGate) use(chain admission.Interface) {
	g.once.Do(func() {
		g.chain = chain
		close(g.open)
	})
}

// wait returns the chain once there is one.
func (g *admissionGate) wait(ctx context.Context, a admission.Attributes) (admission.Interface, error) {
	select {
	case <-g.open:
		if g.chain == nil {
			return nil, admission.NewForbidden(a, errors.New("not yet ready to handle request"))
		}
		return g.chain, nil
	case <-ctx.Done():
		return nil, admission.NewForbidden(a, errors.New("not yet ready to handle request"))
	}
}

// Handles is true: which operations the chain handles is known once it is built.
func (g *admissionGate) Handles(admission.Operation) bool { return true }

// Admit runs the chain's mutating plugins once the chain is built.
func (g *admissionGate) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	chain, err := g.wait(ctx, a)
	if err != nil {
		return err
	}
	if m, ok := chain.(admission.MutationInterface); ok && m.Handles(a.GetOperation()) {
		return m.Admit(ctx, a, o)
	}
	return nil
}

// Validate runs the chain's validating plugins once the chain is built.
func (g *admissionGate) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	chain, err := g.wait(ctx, a)
	if err != nil {
		return err
	}
	if v, ok := chain.(admission.ValidationInterface); ok && v.Handles(a.GetOperation()) {
		return v.Validate(ctx, a, o)
	}
	return nil
}

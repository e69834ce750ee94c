package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apiextensionsscheme "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/scheme"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kubernetes/pkg/controller/validatingadmissionpolicystatus"
	"k8s.io/kubernetes/pkg/generated/openapi"
)

// policyStatusWorkers is kube-controller-manager's default --concurrent-validating-admission-policy-status-syncs.
const policyStatusWorkers = 5

// RunPolicyStatus runs kube-controller-manager's ValidatingAdmissionPolicy status controller:
// each policy's status.typeChecking holds the warnings of type-checking its expressions against
// the kinds it matches (built-in kinds from kube's OpenAPI definitions, others from lapis's
// discovery), and status.observedGeneration the generation checked. It reads policies through
// opts.Factory's informer (the caller starts the factory) and writes status with server-side
// apply over opts.Client, until ctx ends. opts needs Client and Factory; a nil RESTMapper makes
// one over discovery.
func RunPolicyStatus(ctx context.Context, opts Options) error {
	if opts.Client == nil || opts.Factory == nil {
		return errors.New("policy status: Client and Factory are required")
	}
	mapper := opts.RESTMapper
	if mapper == nil {
		mapper = discoveryMapper(opts.Client, ctx.Done())
	}
	schemas := &lazySchemas{build: func() resolver.SchemaResolver {
		return resolver.NewDefinitionsSchemaResolver(openapi.GetOpenAPIDefinitions, scheme.Scheme, apiextensionsscheme.Scheme).
			Combine(&resolver.ClientDiscoveryResolver{Discovery: opts.Client.Discovery()})
	}}
	c, err := validatingadmissionpolicystatus.NewController(
		opts.Factory.Admissionregistration().V1().ValidatingAdmissionPolicies(),
		opts.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies(),
		&validating.TypeChecker{SchemaResolver: schemas, RestMapper: mapper})
	if err != nil {
		return fmt.Errorf("policy status controller: %w", err)
	}
	opts.Factory.Start(ctx.Done()) // the policies' informer, if the chain did not make it
	c.Run(ctx, policyStatusWorkers)
	return nil
}

// lazySchemas is a schema resolver built when the first policy is type-checked: kube's
// definitions resolver holds the OpenAPI definition of every built-in type (~5 MiB of heap),
// which a server without ValidatingAdmissionPolicies never needs.
type lazySchemas struct {
	build func() resolver.SchemaResolver

	once     sync.Once
	resolver resolver.SchemaResolver
}

func (l *lazySchemas) ResolveSchema(gvk schema.GroupVersionKind) (*spec.Schema, error) {
	l.once.Do(func() { l.resolver = l.build() })
	return l.resolver.ResolveSchema(gvk)
}

package server

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/catalog/kube"
	"github.com/lapis-dev/lapis/internal/objects"
)

// kubeDeps gives kube's strategies what they consult beyond the object, read through the
// objects service (bound late: the service needs the catalogue these deps go into), and the
// storage policy cfg sets (events' TTL).
func kubeDeps(cfg Config, svc func() *objects.Service, lb *loopback) kube.Deps {
	return kube.Deps{
		EventTTL:   cfg.EventTTL,
		Admission:  lb.chainOrNil,
		Authorizer: lateAuthorizer{lb},
		CheckWrite: func(ctx context.Context, obj, old runtime.Object) error {
			a := lb.authz.Load()
			if _, fromUser := genericapirequest.UserFrom(ctx); a == nil || !fromUser {
				return nil // lapis's own writes
			}
			return a.CheckRBACWrite(ctx, obj, old)
		},
		Namespace: func(ctx context.Context, name string) (*corev1.Namespace, error) {
			r, _ := svc().Catalog().Lookup(catalog.NamespacesGVR)
			u, err := svc().Get(ctx, r, "", name)
			if err != nil {
				return nil, err
			}
			ns := &corev1.Namespace{}
			return ns, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ns)
		},
		Resolve: func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
			for _, r := range svc().Catalog().All() {
				if r.GroupVersionKind() == gvk {
					return r.GroupVersionResource(), nil
				}
			}
			return schema.GroupVersionResource{}, &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
		},
	}
}

// lateAuthorizer is the request path's authorizer, which exists once the loopback informers it
// reads do: before, it has no opinion.
type lateAuthorizer struct{ lb *loopback }

func (l lateAuthorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if a := l.lb.authz.Load(); a != nil {
		return a.Authorize(ctx, attrs)
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (l lateAuthorizer) ConditionsAwareAuthorize(ctx context.Context, attrs authorizer.Attributes) authorizer.ConditionsAwareDecision {
	if a := l.lb.authz.Load(); a != nil {
		return a.ConditionsAwareAuthorize(ctx, attrs)
	}
	return authorizer.ConditionsAwareDecisionNoOpinion("", nil)
}

func (l lateAuthorizer) EvaluateConditions(ctx context.Context, decision authorizer.ConditionsAwareDecision, data authorizer.ConditionsData) (authorizer.Decision, string, error) {
	if a := l.lb.authz.Load(); a != nil {
		return a.EvaluateConditions(ctx, decision, data)
	}
	return authorizer.DecisionNoOpinion, "", nil
}

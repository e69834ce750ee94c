package special

import (
	"testing"

	"github.com/lapis-dev/lapis/internal/handlers"
)

// TestNewRoutes: the table serves exactly kube-apiserver's special endpoints, each by its kind
// of endpoint.
func TestNewRoutes(t *testing.T) {
	e := New(nil, Auth{}, nil)
	for _, tc := range []struct {
		route handlers.Route
		is    func(handlers.Endpoint) bool
	}{
		{handlers.Route{Resource: "bindings"}, isA[*binder]},
		{handlers.Route{Resource: "pods", Subresource: "binding"}, isA[*binder]},
		{handlers.Route{Resource: "pods", Subresource: "eviction"}, isA[*evictions]},
		{handlers.Route{Resource: "serviceaccounts", Subresource: "token"}, isA[*tokenRequests]},
		{handlers.Route{Resource: "componentstatuses"}, isA[*componentStatuses]},
		{handlers.Route{Subresource: "scale"}, isA[*scales]},
		{handlers.Route{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}, isA[*review]},
		{handlers.Route{Group: "authentication.k8s.io", Resource: "tokenreviews"}, isA[*review]},
		{handlers.Route{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, isA[*review]},
		{handlers.Route{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}, isA[*review]},
		{handlers.Route{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}, isA[*review]},
		{handlers.Route{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}, isA[*review]},
	} {
		if got, ok := e[tc.route]; !ok || !tc.is(got) {
			t.Errorf("%+v: got %T", tc.route, got)
		}
	}
	if len(e) != 12 {
		t.Errorf("%d routes, want 12", len(e))
	}
}

func isA[T handlers.Endpoint](e handlers.Endpoint) bool {
	_, ok := e.(T)
	return ok
}

package special

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/registry/authentication/selfsubjectreview"
	"k8s.io/kubernetes/pkg/registry/authentication/tokenreview"
	"k8s.io/kubernetes/pkg/registry/authorization/localsubjectaccessreview"
	"k8s.io/kubernetes/pkg/registry/authorization/selfsubjectaccessreview"
	"k8s.io/kubernetes/pkg/registry/authorization/selfsubjectrulesreview"
	"k8s.io/kubernetes/pkg/registry/authorization/subjectaccessreview"

	"github.com/lapis-dev/lapis/internal/fieldmanager"
	"github.com/lapis-dev/lapis/internal/handlers"
)

// reviewCreaters are kube's REST endpoints of the review resources, over the request path's
// authenticator and authorizer: kube's validation, its answers and its errors.
func reviewCreaters(a Auth) map[schema.GroupResource]rest.Creater {
	return map[schema.GroupResource]rest.Creater{
		{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:       selfsubjectreview.NewREST(),
		{Group: "authentication.k8s.io", Resource: "tokenreviews"}:             tokenreview.NewREST(a.Authenticator, a.Audiences),
		{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}:      subjectaccessreview.NewREST(a.Authorizer, legacyscheme.Scheme),
		{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}:  selfsubjectaccessreview.NewREST(a.Authorizer, legacyscheme.Scheme),
		{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}: localsubjectaccessreview.NewREST(a.Authorizer, legacyscheme.Scheme),
		{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:   selfsubjectrulesreview.NewREST(a.Rules),
	}
}

// review is a review resource, answered by kube's REST endpoint.
type review struct {
	creater rest.Creater
	fields  *fieldmanager.Computed
}

var _ handlers.Endpoint = (*review)(nil)

// Serve answers a create with kube's REST endpoint: 201 and the review with its status.
// Dry-run changes nothing: a review stores nothing.
func (v *review) Serve(rq *handlers.Request) error {
	r := rq.Resource()
	if rq.Info().Verb != "create" {
		return apierrors.NewMethodNotSupported(schema.GroupResource{Group: r.GroupVersion.Group, Resource: r.Name}, rq.Info().Verb)
	}
	obj, opts, warnings, err := rq.DecodeCreate(handlers.Body{Kind: r.Kind, Versions: []schema.GroupVersion{r.GroupVersion}})
	if err != nil {
		return err
	}
	rq.Warn(warnings)
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(rq.Info().Namespace, m); err != nil {
		return err
	}
	// kube-apiserver's create handler records the fields before its REST endpoint sees them.
	v.fields.Track(r, "", obj, rq.Manager(opts.FieldManager))
	out, err := v.creater.Create(rq.Context(), obj, nil, &opts)
	if err != nil {
		return err
	}
	return rq.Respond(http.StatusCreated, out, r.GroupVersion)
}

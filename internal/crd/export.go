package crd

import (
	"log/slog"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// ResourcesFor returns the catalogue entries the controller serves for crd, built by the same
// code. A CRD whose status has no accepted names gets its spec names accepted first, as the
// controller does when no other CRD of the group conflicts. It is for tests and tools that run
// a bare objects.Service, with no controller; crd is not modified. Conversion webhooks are
// called as by a controller without UseWebhookConversion (service references through DNS).
func ResourcesFor(crd *apiextensionsv1.CustomResourceDefinition) []*catalog.Resource {
	crd = crd.DeepCopy()
	c := &Controller{cat: catalog.New(), log: slog.New(slog.DiscardHandler), conversion: &webhookConversion{}}
	if crd.Status.AcceptedNames.Plural == "" {
		crd.Status = c.acceptNames(crd)
	}
	return c.resources(crd)
}

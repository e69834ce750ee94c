package openapi

import (
	"net/http"

	"k8s.io/kube-openapi/pkg/aggregator"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Aggregated is what extension API servers add to the OpenAPI documents (the aggregation
// layer's part, kept as kube's OpenAPI aggregation controllers keep it).
type Aggregated interface {
	// Revision changes whenever what the other methods return does.
	Revision() uint64
	// V2 are the extension servers' v2 documents, in the order kube merges them.
	V2() []*spec.Swagger
	// V3Paths are their group versions' v3 documents: path ("apis/GROUP/VERSION") to
	// server-relative URL.
	V3Paths() map[string]string
	// ServeV3 serves the v3 document of an extension server's group version (a request for
	// /openapi/v3/PATH); false when no extension server has it.
	ServeV3(w http.ResponseWriter, r *http.Request) bool
}

// none is the aggregation of a server without extension servers.
type none struct{}

func (none) Revision() uint64                                { return 0 }
func (none) V2() []*spec.Swagger                             { return nil }
func (none) V3Paths() map[string]string                      { return nil }
func (none) ServeV3(http.ResponseWriter, *http.Request) bool { return false }

// mergedV2 merges the extension servers' v2 documents into doc, as kube's aggregator merges
// them: a path doc has stays doc's, clashing definitions and parameters are renamed. It
// returns the error of a merge that fails.
func mergedV2(doc *spec.Swagger, remote []*spec.Swagger) any {
	for _, r := range remote {
		if err := aggregator.MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters(doc, r); err != nil {
			return err
		}
	}
	return doc
}

package aggregation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// testOpenAPI compares the sample's group in OpenAPI: /openapi/v3 lists
// apis/wardle.example.com/v1alpha1, whose document is compared whole, and /openapi/v2 has the
// Flunder definitions and the group's paths.
func testOpenAPI(t *testing.T, kube, lapis *side) {
	const v3Path = "apis/" + defaultApiServiceGroupName + "/" + defaultApiServiceVersion
	listed := func(ctx context.Context, s *side) (string, bool) {
		a := s.get(ctx, "/openapi/v3", "")
		var doc struct {
			Paths map[string]struct {
				ServerRelativeURL string `json:"serverRelativeURL"`
			} `json:"paths"`
		}
		if a.code != 200 || json.Unmarshal(a.body, &doc) != nil {
			return mask(answerText(a), s.masks), false
		}
		p, ok := doc.Paths[v3Path]
		return mask(fmt.Sprintf("%s listed: %v, at %s", v3Path, ok, p.ServerRelativeURL), s.masks), ok
	}
	k, l := settleBoth(t.Context(), kube, lapis, listed)
	expectSame(t, "/openapi/v3 lists "+v3Path, k, l)
	k, l = settleBoth(t.Context(), kube, lapis, wholeDocument("/openapi/v3/"+v3Path, "application/json"))
	expectSame(t, "GET /openapi/v3/"+v3Path, k, l)
	k, l = settleBoth(t.Context(), kube, lapis, openAPIv2)
	expectSame(t, "/openapi/v2: the definitions and paths of "+defaultApiServiceGroupName, k, l)
}

// openAPIv2 reads /openapi/v2: the answer is the definitions of the sample's types and the
// paths of its group, whole, ready once the Flunder definition is there.
func openAPIv2(ctx context.Context, s *side) (string, bool) {
	a := s.get(ctx, "/openapi/v2", "application/json")
	var doc struct {
		Definitions map[string]json.RawMessage `json:"definitions"`
		Paths       map[string]json.RawMessage `json:"paths"`
	}
	if a.code != 200 || json.Unmarshal(a.body, &doc) != nil {
		return mask(fmt.Sprintf("%d %s %.300s", a.code, a.contentType, a.body), s.masks), false
	}
	var b strings.Builder
	ready := false
	for _, name := range sortedKeys(doc.Definitions) {
		if strings.Contains(name, "sample-apiserver") || strings.Contains(name, "wardle") {
			ready = ready || strings.HasSuffix(name, ".Flunder")
			fmt.Fprintf(&b, "definition %s: %s\n", name, canonicalJSON(doc.Definitions[name]))
		}
	}
	for _, path := range sortedKeys(doc.Paths) {
		if strings.HasPrefix(path, wardle+"/") {
			fmt.Fprintf(&b, "path %s: %s\n", path, canonicalJSON(doc.Paths[path]))
		}
	}
	return mask(b.String(), s.masks), ready
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

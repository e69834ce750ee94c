package aggregation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// aggregatedDiscovery is the Accept header of aggregated discovery (apidiscovery.k8s.io/v2).
const aggregatedDiscovery = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// testDiscovery compares the discovery documents that name the sample-apiserver's group: legacy
// /apis, /apis/wardle.example.com (the aggregator's), /apis/wardle.example.com/v1alpha1 (the
// extension server's, proxied) and aggregated /apis.
func testDiscovery(t *testing.T, kube, lapis *side) {
	for _, c := range []struct {
		what string
		p    probe
	}{
		{"legacy /apis (groups in order, and " + defaultApiServiceGroupName + ")", legacyGroups},
		{"GET " + wardle, wholeDocument(wardle, "")},
		{"GET " + wardleVersion, wholeDocument(wardleVersion, "")},
		{"aggregated /apis (groups in order, and " + defaultApiServiceGroupName + " Current)", aggregatedGroups("Current")},
	} {
		k, l := settleBoth(t.Context(), kube, lapis, c.p)
		expectSame(t, c.what, k, l)
	}
}

// wholeDocument GETs path, ready on a 200; the answer is code, Content-Type and body.
func wholeDocument(path, accept string) probe {
	return func(ctx context.Context, s *side) (string, bool) {
		a := s.get(ctx, path, accept)
		return mask(answerText(a), s.masks), a.code == 200
	}
}

// legacyGroups reads /apis as an APIGroupList: the answer is the groups' names in order and the
// sample's group whole, ready once that group is listed.
func legacyGroups(ctx context.Context, s *side) (string, bool) {
	a := s.get(ctx, "/apis", "")
	var list struct {
		Groups []json.RawMessage `json:"groups"`
	}
	if a.code != 200 || json.Unmarshal(a.body, &list) != nil {
		return mask(answerText(a), s.masks), false
	}
	return groupsAnswer(list.Groups, s, "")
}

// aggregatedGroups reads /apis as an APIGroupDiscoveryList: the answer is the Content-Type,
// the groups' names in order and the sample's group whole, ready once that group is listed
// with freshness (Current or Stale; absent is Current).
func aggregatedGroups(freshness string) probe {
	return func(ctx context.Context, s *side) (string, bool) {
		a := s.get(ctx, "/apis", aggregatedDiscovery)
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if a.code != 200 || json.Unmarshal(a.body, &list) != nil {
			return mask(answerText(a), s.masks), false
		}
		answer, ready := groupsAnswer(list.Items, s, freshness)
		return a.contentType + "\n" + answer, ready
	}
}

// groupsAnswer lists the groups' names and the sample's group whole; it is ready once that
// group is there, with freshness when one is given.
func groupsAnswer(groups []json.RawMessage, s *side, freshness string) (string, bool) {
	var names []string
	var ours json.RawMessage
	for _, raw := range groups {
		var g struct {
			Name     string `json:"name"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(raw, &g)
		name := g.Name + g.Metadata.Name // legacy has name, aggregated metadata.name
		names = append(names, name)
		if name == defaultApiServiceGroupName {
			ours = raw
		}
	}
	answer := fmt.Sprintf("groups: %s\n%s: %s", strings.Join(names, " "), defaultApiServiceGroupName, canonicalJSON(ours))
	ready := ours != nil && (freshness == "" || groupFreshness(ours) == freshness)
	return mask(answer, s.masks), ready
}

// groupFreshness is the freshness of an aggregated discovery group's first version ("Current"
// when absent, as the field's default).
func groupFreshness(group json.RawMessage) string {
	var g struct {
		Versions []struct {
			Freshness string `json:"freshness"`
		} `json:"versions"`
	}
	if json.Unmarshal(group, &g) != nil || len(g.Versions) == 0 {
		return ""
	}
	if g.Versions[0].Freshness == "" {
		return "Current"
	}
	return g.Versions[0].Freshness
}

package aggregation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// TestAggregation registers a sample-apiserver behind kube and behind lapis alike, and compares
// what users see of it through each (see doc.go).
func TestAggregation(t *testing.T) {
	lapisTarget, kubeTarget := servers(t)
	kube, lapis := register(t, kubeTarget, lapisTarget)
	steps := []struct {
		name string
		run  func(t *testing.T, kube, lapis *side)
	}{
		{"Available", testAvailable},
		{"kubectl", testKubectl},
		{"Flunders", testFlunders},
		{"Refusals", testRefusals},
		{"Discovery", testDiscovery},
		{"OpenAPI", testOpenAPI},
		{"Stopped", testStopped},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) { step.run(t, kube, lapis) })
	}
}

// testAvailable waits for the APIService to be Available and compares it, conditions included,
// and `kubectl get apiservices` of it.
func testAvailable(t *testing.T, kube, lapis *side) {
	k, l := settleBoth(t.Context(), kube, lapis, apiServiceProbe(apiregistrationv1.ConditionTrue))
	expectSame(t, "APIService "+apiServiceName+" Available=True", k, l)
	k, l = settleBoth(t.Context(), kube, lapis, kubectlProbe("get", "apiservices", apiServiceName))
	expectSame(t, "kubectl get apiservices "+apiServiceName, k, l)
}

// apiServiceProbe reads the APIService, ready when its Available condition has status.
func apiServiceProbe(status apiregistrationv1.ConditionStatus) probe {
	return func(ctx context.Context, s *side) (string, bool) {
		a, err := s.aggregator.ApiregistrationV1().APIServices().Get(ctx, apiServiceName, metav1.GetOptions{})
		if err != nil {
			return "error: " + err.Error(), false
		}
		b, _ := json.Marshal(a)
		ready := false
		for _, c := range a.Status.Conditions {
			ready = ready || (c.Type == apiregistrationv1.Available && c.Status == status)
		}
		return mask(canonicalJSON(b), s.masks), ready
	}
}

// kubectlProbe runs kubectl with args, ready when it succeeds; the answer is its output and
// error, masked.
func kubectlProbe(args ...string) probe {
	return func(ctx context.Context, s *side) (string, bool) {
		out, err := s.kubectl(ctx, args...)
		if err != nil {
			return mask(out+"\n"+err.Error(), s.masks), false
		}
		return mask(out, s.masks), true
	}
}

// testKubectl compares `kubectl api-resources` (once it lists flunders) and `kubectl explain`.
func testKubectl(t *testing.T, kube, lapis *side) {
	listsFlunders := func(ctx context.Context, s *side) (string, bool) {
		a, ok := kubectlProbe("api-resources", "-o", "wide")(ctx, s)
		return a, ok && strings.Contains(a, "flunders")
	}
	k, l := settleBoth(t.Context(), kube, lapis, listsFlunders)
	expectSame(t, "kubectl api-resources -o wide (listing flunders)", k, l)
	for _, args := range [][]string{
		{"api-resources", "--api-group", defaultApiServiceGroupName},
		{"explain", "flunders"},
		{"explain", "flunders.spec"},
		{"explain", "fischers", "--recursive"},
	} {
		k, l := settleBoth(t.Context(), kube, lapis, kubectlProbe(args...))
		expectSame(t, "kubectl "+strings.Join(args, " "), k, l)
	}
}

// step is one request of a sequence and what came of it, masked.
type step struct{ what, answer string }

// transcript runs seq on kube and on lapis (one after the other: each is a sequence of
// dependent requests) and compares what came of each step.
func transcript(t *testing.T, kube, lapis *side, seq func(ctx context.Context, s *side) []step) {
	t.Helper()
	k, l := seq(t.Context(), kube), seq(t.Context(), lapis)
	for i := range max(len(k), len(l)) {
		switch {
		case i >= len(k):
			t.Errorf("lapis did more than kube: %s: %s", l[i].what, l[i].answer)
		case i >= len(l):
			t.Errorf("lapis stopped before %s (kube: %s)", k[i].what, k[i].answer)
		case k[i].what != l[i].what:
			t.Fatalf("the sequences diverged: kube %q, lapis %q", k[i].what, l[i].what)
		case k[i].answer != l[i].answer:
			t.Errorf("%s: lapis answers differently from kube; %s", k[i].what, difference(k[i].answer, l[i].answer))
		}
	}
}

func describeErr(err error) string {
	if err == nil {
		return "ok"
	}
	return fmt.Sprintf("error: %v", err)
}

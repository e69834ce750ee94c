package aggregation

import (
	"context"
	"strings"
	"sync"
	"testing"

	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// testStopped stops both sample-apiservers and compares what follows: the APIService's
// Available condition (False, with the availability controller's reason and message), the
// proxy's answer, the APIService as kubectl shows it, and aggregated discovery keeping the
// group's last documents marked Stale.
func testStopped(t *testing.T, kube, lapis *side) {
	kube.f.stopSampleAPIServer()
	lapis.f.stopSampleAPIServer()
	k, l := settleBoth(t.Context(), kube, lapis, apiServiceProbe(apiregistrationv1.ConditionFalse))
	expectSame(t, "APIService "+apiServiceName+" Available=False once its server is gone", k, l)
	k, l = settleBoth(t.Context(), kube, lapis, steady(func(ctx context.Context, s *side) (string, bool) {
		a := s.get(ctx, flundersPath, "")
		return mask(answerText(a), s.masks), a.code != 200
	}))
	expectSame(t, "GET "+flundersPath+" with the extension server gone", k, l)
	k, l = settleBoth(t.Context(), kube, lapis, kubectlProbe("get", "apiservices", apiServiceName))
	expectSame(t, "kubectl get apiservices "+apiServiceName+" with the extension server gone", k, l)
	k, l = settleBoth(t.Context(), kube, lapis, aggregatedGroups("Stale"))
	expectSame(t, "aggregated /apis with "+defaultApiServiceGroupName+" Stale", k, l)
	k, l = settleBoth(t.Context(), kube, lapis, steady(func(ctx context.Context, s *side) (string, bool) {
		answer, _ := legacyGroups(ctx, s) // listed or not: what the server says once steady
		return answer, strings.HasPrefix(answer, "groups: ")
	}))
	expectSame(t, "legacy /apis with the extension server gone", k, l)
}

// steady makes p ready only once a server gives the same answer twice in a row, ready both
// times (an answer that changes while the aggregator catches up is not compared).
func steady(p probe) probe {
	var mu sync.Mutex
	last := map[*side]string{}
	return func(ctx context.Context, s *side) (string, bool) {
		answer, ready := p(ctx, s)
		mu.Lock()
		defer mu.Unlock()
		previous, seen := last[s]
		if !ready {
			delete(last, s)
			return answer, false
		}
		last[s] = answer
		return answer, seen && previous == answer
	}
}

package aggregation

import (
	"context"
	"testing"
)

// The differential test's names: the e2e spec's APIService, in a namespace of its own.
const (
	diffNamespace  = "aggregation"
	apiServiceName = defaultApiServiceVersion + "." + defaultApiServiceGroupName
	wardle         = "/apis/" + defaultApiServiceGroupName
	wardleVersion  = wardle + "/" + defaultApiServiceVersion
	flundersPath   = wardleVersion + "/namespaces/" + diffNamespace + "/flunders"
)

// side is one server of TestAggregation with its sample-apiserver.
type side struct {
	*target
	f     *e2eFramework
	reg   registration
	masks []masking
}

// registration is what differs between the two servers' sample-apiservers.
type registration struct {
	port     int
	caBundle []byte
}

// register sets up a sample-apiserver behind kube and behind lapis as the e2e spec does
// (registerSampleAPIServer), each in a subtest of t so that a failure on one leaves the other,
// and the comparisons, to run. Everything is removed when t ends.
func register(t *testing.T, kube, lapis *target) (k, l *side) {
	var sides []*side
	for _, s := range []*target{kube, lapis} {
		sd := &side{target: s, f: newE2EFramework(t, s, diffNamespace)}
		names := generateSampleAPIServerObjectNames(diffNamespace)
		t.Cleanup(func() {
			sd.f.t = t
			cleanupSampleAPIServer(context.Background(), sd.f, s.aggregator, names, apiServiceName)
		})
		t.Run("register/"+s.name, func(t *testing.T) {
			sd.f.t = t
			registerSampleAPIServer(t.Context(), sd.f, s.aggregator, names, defaultApiServiceGroupName, defaultApiServiceVersion)
		})
		sd.f.t = t
		if sd.f.sample != nil {
			sd.reg = registration{port: sd.f.sample.Port, caBundle: sd.f.sample.CABundle}
		}
		sd.masks = masksOf(s, &sd.reg)
		sides = append(sides, sd)
	}
	return sides[0], sides[1]
}

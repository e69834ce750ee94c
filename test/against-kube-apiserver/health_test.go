package againstkube

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// notRunByLapis are kube-apiserver 1.37's health checks for work lapis does not do, each with
// the issue that brings that work (and its check with it). The checks are compared in name
// and order; any other difference fails, and so does an entry kube no longer lists.
var notRunByLapis = map[string]string{
	"poststarthook/priority-and-fairness-filter": "issue 28 (API Priority and Fairness): lapis does not queue requests by priority",
	"poststarthook/priority-and-fairness-config-consumer": "issue 28 (API Priority and Fairness): the controller that configures the filter " +
		"from FlowSchemas (lapis keeps only their Dangling condition)",
	"poststarthook/storage-object-count-tracker-hook":   "issue 28 (API Priority and Fairness): the object counts APF's work estimator reads",
	"poststarthook/peer-endpoint-reconciler-controller": "issue 28 (API server identity): the peer endpoint leases of kube's mixed-version proxy",
	"poststarthook/storage-readiness":                   "no issue yet: lapis's watch caches start with a resource's first read, which nothing waits for at start",
}

// TestHealth: /healthz, /livez and /readyz with ?verbose list kube-apiserver's checks, in
// kube's order, less those of work lapis does not do (notRunByLapis); each check's own path
// answers as kube's.
func TestHealth(t *testing.T) {
	lapis, kube := servers(t)
	seen := map[string]bool{}
	for _, endpoint := range []string{"/healthz", "/livez", "/readyz"} {
		t.Run(endpoint, func(t *testing.T) {
			kubeChecks, lapisChecks := checksOf(t, kube, endpoint), checksOf(t, lapis, endpoint)
			var want []string
			for _, c := range kubeChecks {
				if _, notRun := notRunByLapis[c]; notRun {
					seen[c] = true
				} else {
					want = append(want, c)
				}
			}
			if !slices.Equal(lapisChecks, want) {
				t.Errorf("%s?verbose lists\n  %s\nkube's, less those lapis does not run, are\n  %s", endpoint,
					strings.Join(lapisChecks, "\n  "), strings.Join(want, "\n  "))
			}
			for _, c := range want {
				r := request{method: "GET", path: endpoint + "/" + c}
				compareText(t, r, send(r, r))
			}
		})
	}
	for c, why := range notRunByLapis {
		if !seen[c] {
			t.Errorf("kube-apiserver no longer lists %s: drop it from notRunByLapis (%s)", c, why)
		}
	}
}

// checksOf returns the checks endpoint?verbose lists, once every one passes (a hook may finish
// after the server's kubeconfig is written).
func checksOf(t *testing.T, s *target, endpoint string) []string {
	t.Helper()
	var resp response
	eventually(t, s, endpoint+" passing", func() bool {
		resp = s.do(request{method: "GET", path: endpoint + "?verbose"})
		return resp.code == http.StatusOK
	})
	var checks []string
	for _, line := range strings.Split(strings.TrimSpace(string(resp.body)), "\n") {
		if name, ok := strings.CutSuffix(strings.TrimPrefix(line, "[+]"), " ok"); ok && strings.HasPrefix(line, "[+]") {
			checks = append(checks, name)
		} else if line != strings.TrimPrefix(endpoint, "/")+" check passed" {
			t.Errorf("%s: %s?verbose: unexpected line %q", s.name, endpoint, line)
		}
	}
	return checks
}

// compareText fails t unless both servers gave the same code and body.
func compareText(t *testing.T, r request, x exchange) {
	t.Helper()
	if x.lapis.code != x.kube.code || string(x.lapis.body) != string(x.kube.body) || x.lapis.err != nil || x.kube.err != nil {
		t.Errorf("%s:\n  kube:  %d %q %v\n  lapis: %d %q %v", r, x.kube.code, x.kube.body, x.kube.err, x.lapis.code, x.lapis.body, x.lapis.err)
	}
}

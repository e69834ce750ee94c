package server

import (
	"errors"
	"net/http"
	"strings"
)

// holdOpenAPI is the transport of the admission chain's loopback client: its requests for
// OpenAPI documents wait until lapis is ready (or stops). kube's MutatingAdmissionPolicy plugin
// asks for /openapi/v3 as soon as it is built, then every 5 s; the answer has lapis build every
// group-version's OpenAPI v3 document (~200 ms of CPU), which competed with the start-up's own
// writes on 2 cores (a fresh start took ~40 ms longer). Until that first answer, a write a
// MutatingAdmissionPolicy matches is answered 503, as kube's plugin answers it; a fresh data
// dir has no such policy, and after a restart the answer came after readiness before too.
type holdOpenAPI struct {
	next    http.RoundTripper
	ready   <-chan struct{}
	stopped <-chan struct{}
}

// errStopping is what a held request gets when lapis stops first.
var errStopping = errors.New("lapis is stopping")

func (h holdOpenAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasPrefix(req.URL.Path, "/openapi/") {
		select {
		case <-h.ready:
		case <-h.stopped:
			return nil, errStopping
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	return h.next.RoundTrip(req)
}

// WrappedRoundTripper lets client-go reach the transport beneath (to close idle connections).
func (h holdOpenAPI) WrappedRoundTripper() http.RoundTripper { return h.next }

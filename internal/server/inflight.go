package server

import (
	"net/http"

	"k8s.io/apimachinery/pkg/util/sets"
	serverfilters "k8s.io/apiserver/pkg/server/filters"
)

// withInflightLimit is kube-apiserver's filter for --max-requests-inflight and
// --max-mutating-requests-inflight as kube runs it without API Priority and Fairness: a
// request beyond its class's limit is answered 429 TooManyRequests (Retry-After: 1), unless
// it is system:masters'; watches, exec, attach, port-forward, proxy and logs are not counted.
// A limit of 0 is none. It goes where kube puts it: after authentication and impersonation (the
// user is known), before authorization.
func withInflightLimit(h http.Handler, cfg Config) http.Handler {
	return serverfilters.WithMaxInFlightLimit(h, cfg.MaxRequestsInflight, cfg.MaxMutatingRequestsInflight, longRunningRequest)
}

// longRunningRequest is kube-apiserver's long-running request check.
var longRunningRequest = serverfilters.BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"), sets.NewString("attach", "exec", "proxy", "log", "portforward"))

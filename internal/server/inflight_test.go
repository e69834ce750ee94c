package server

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

func TestInflightLimit(t *testing.T) {
	release := make(chan struct{})
	var entered sync.WaitGroup
	blocking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Block") != "" {
			entered.Done()
			<-release
		}
	})
	limited := withInflightLimit(blocking, Config{MaxRequestsInflight: 1, MaxMutatingRequestsInflight: 1})
	handler := genericfilters.WithRequestInfo(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if groups := r.Header.Get("Groups"); groups != "" {
			r = r.WithContext(genericapirequest.WithUser(r.Context(), &user.DefaultInfo{Name: "u", Groups: []string{groups}}))
		}
		limited.ServeHTTP(w, r)
	}), requestInfoResolver)
	do := func(method, path, groups string, block bool) int {
		req := httptest.NewRequest(method, path, nil)
		if groups != "" {
			req.Header.Set("Groups", groups)
		}
		if block {
			req.Header.Set("Block", "1")
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec.Code
	}

	// One write and one read in flight fill both limits.
	entered.Add(2)
	done := make(chan struct{})
	go func() { do("POST", "/api/v1/namespaces/a/configmaps", "", true); done <- struct{}{} }()
	go func() { do("GET", "/api/v1/namespaces/a/configmaps/x", "", true); done <- struct{}{} }()
	entered.Wait()
	for _, c := range []struct {
		method, path, groups string
		want                 int
	}{
		{"POST", "/api/v1/namespaces/a/configmaps", "", http.StatusTooManyRequests},
		{"DELETE", "/api/v1/namespaces/a/configmaps/x", "system:authenticated", http.StatusTooManyRequests},
		{"GET", "/api/v1/namespaces/a/configmaps", "", http.StatusTooManyRequests},
		{"POST", "/api/v1/namespaces/a/configmaps", user.SystemPrivilegedGroup, http.StatusOK},
		{"GET", "/api/v1/namespaces/a/configmaps?watch=true", "", http.StatusOK},
		{"GET", "/api/v1/namespaces/a/pods/p/log", "", http.StatusOK},
	} {
		if got := do(c.method, c.path, c.groups, false); got != c.want {
			t.Errorf("%s %s as %q with both limits reached: %d, want %d", c.method, c.path, c.groups, got, c.want)
		}
	}
	close(release)
	<-done
	<-done
	if got := do("POST", "/api/v1/namespaces/a/configmaps", "", false); got != http.StatusOK {
		t.Errorf("POST once the others finished: %d", got)
	}
	// No limits: the handler itself.
	if got := withInflightLimit(blocking, Config{}); got == nil {
		t.Error("nil handler")
	}
}

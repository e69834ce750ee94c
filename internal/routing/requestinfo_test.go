package routing

import (
	"net/http/httptest"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		method, path string
		want         RequestInfo
	}{
		{"GET", "/api/v1/namespaces", RequestInfo{IsResource: true, Verb: "list", APIPrefix: "api", Version: "v1", Resource: "namespaces"}},
		{"GET", "/api/v1/namespaces/foo", RequestInfo{IsResource: true, Verb: "get", APIPrefix: "api", Version: "v1", Namespace: "foo", Resource: "namespaces", Name: "foo"}},
		{"PUT", "/api/v1/namespaces/foo/finalize", RequestInfo{IsResource: true, Verb: "update", APIPrefix: "api", Version: "v1", Namespace: "foo", Resource: "namespaces", Name: "foo", Subresource: "finalize"}},
		{"GET", "/api/v1/namespaces/foo/configmaps", RequestInfo{IsResource: true, Verb: "list", APIPrefix: "api", Version: "v1", Namespace: "foo", Resource: "configmaps"}},
		{"DELETE", "/api/v1/namespaces/foo/configmaps", RequestInfo{IsResource: true, Verb: "deletecollection", APIPrefix: "api", Version: "v1", Namespace: "foo", Resource: "configmaps"}},
		{"PATCH", "/api/v1/namespaces/foo/configmaps/x", RequestInfo{IsResource: true, Verb: "patch", APIPrefix: "api", Version: "v1", Namespace: "foo", Resource: "configmaps", Name: "x"}},
		{"GET", "/apis/example.com/v1/namespaces/ns/widgets/w/status", RequestInfo{IsResource: true, Verb: "get", APIPrefix: "apis", Group: "example.com", Version: "v1", Namespace: "ns", Resource: "widgets", Name: "w", Subresource: "status"}},
		{"GET", "/apis/example.com/v1/widgets?watch=true", RequestInfo{IsResource: true, Verb: "watch", APIPrefix: "apis", Group: "example.com", Version: "v1", Resource: "widgets"}},
		{"GET", "/api/v1/namespaces/ns/configmaps/x?watch=true", RequestInfo{IsResource: true, Verb: "get", APIPrefix: "api", Version: "v1", Namespace: "ns", Resource: "configmaps", Name: "x"}},
		{"GET", "/api/v1/namespaces/ns/status?watch=1", RequestInfo{IsResource: true, Verb: "get", APIPrefix: "api", Version: "v1", Namespace: "ns", Resource: "namespaces", Name: "ns", Subresource: "status"}},
		{"GET", "/api/v1/watch/namespaces/ns/configmaps/x", RequestInfo{IsResource: true, Verb: "watch", APIPrefix: "api", Version: "v1", Namespace: "ns", Resource: "configmaps", Name: "x"}},
		{"GET", "/api/v1/watch/namespaces/ns/configmaps", RequestInfo{IsResource: true, Verb: "watch", APIPrefix: "api", Version: "v1", Namespace: "ns", Resource: "configmaps"}},
		{"GET", "/apis/example.com/v1", RequestInfo{}},
		{"GET", "/healthz", RequestInfo{}},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			got := Parse(httptest.NewRequest(tt.method, tt.path, nil))
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

package againstreference

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
)

// TestBadRequests sends the same malformed or refused requests to both servers and compares the
// status code, reason and message of the answers.
func TestBadRequests(t *testing.T) {
	lapisDyn, refDyn := both(t)
	installCRDs(t, lapisDyn)
	installCRDs(t, refDyn)
	const (
		collection = "/apis/diff.example.com/v1/namespaces/default/marked"
		object     = collection + "/bad-requests"
		valid      = `{"apiVersion":"diff.example.com/v1","kind":"Marked","metadata":{"name":"bad-requests"},"spec":{"replicas":1}}`
	)
	tests := []struct {
		name, method, path, contentType, body string
	}{
		{"create", "POST", collection, "application/json", valid},
		{"unknown dryRun on create", "POST", collection + "?dryRun=Bogus", "application/json", valid},
		{"unknown dryRun on delete", "DELETE", object + "?dryRun=Bogus", "application/json", ""},
		{"unknown fieldValidation", "POST", collection + "?fieldValidation=Bogus", "application/json", valid},
		{"malformed JSON", "POST", collection, "application/json", `{"apiVersion":`},
		{"update without resourceVersion", "PUT", object, "application/json", `{"apiVersion":"diff.example.com/v1","kind":"Marked","metadata":{"name":"bad-requests"},"spec":{"replicas":"x"}}`},
		{"schema violation", "PATCH", object, "application/merge-patch+json", `{"spec":{"replicas":"x"}}`},
		{"wrong kind", "POST", collection, "application/json", `{"apiVersion":"diff.example.com/v1","kind":"Plain","metadata":{"name":"k"}}`},
		{"wrong apiVersion", "POST", collection, "application/json", `{"apiVersion":"diff.example.com/v2","kind":"Marked","metadata":{"name":"k"}}`},
		{"bad name", "POST", collection, "application/json", `{"apiVersion":"diff.example.com/v1","kind":"Marked","metadata":{"name":"Bad_Name"}}`},
		{"unknown field, strict", "POST", collection + "?fieldValidation=Strict", "application/json", `{"apiVersion":"diff.example.com/v1","kind":"Marked","metadata":{"name":"u"},"spec":{"bogus":1}}`},
		{"duplicate field, strict", "POST", collection + "?fieldValidation=Strict", "application/json", `{"apiVersion":"diff.example.com/v1","kind":"Marked","metadata":{"name":"d"},"spec":{},"spec":{}}`},
		{"merge patch unknown field, strict", "PATCH", object + "?fieldValidation=Strict", "application/merge-patch+json", `{"spec":{"bogus":1}}`},
		{"apply without fieldManager", "PATCH", object, "application/apply-patch+yaml", valid},
		{"force outside apply", "PATCH", object + "?force=true", "application/merge-patch+json", `{}`},
		{"strategic merge patch", "PATCH", object, "application/strategic-merge-patch+json", `{}`},
		{"failing JSON patch test", "PATCH", object, "application/json-patch+json", `[{"op":"test","path":"/spec/replicas","value":5}]`},
		{"JSON patch that is not a list", "PATCH", object, "application/json-patch+json", `{"op":"add"}`},
		{"dry-run delete", "DELETE", object + "?dryRun=All", "", ""},
		{"stale resourceVersion", "PUT", object, "application/json", `{"apiVersion":"diff.example.com/v1","kind":"Marked","metadata":{"name":"bad-requests","resourceVersion":"1"}}`},
		{"name mismatch", "PUT", object, "application/json", `{"apiVersion":"diff.example.com/v1","kind":"Marked","metadata":{"name":"other"}}`},
		{"missing object", "GET", collection + "/nope", "", ""},
		{"delete", "DELETE", object, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			codeL, errL := raw(t, servers.lapis, tt.method, tt.path, tt.contentType, tt.body)
			codeR, errR := raw(t, servers.reference, tt.method, tt.path, tt.contentType, tt.body)
			if codeL != codeR {
				t.Errorf("status code: lapis %d, reference %d (lapis %v; reference %v)", codeL, codeR, errL, errR)
			}
			compareErrors(t, tt.name, errL, errR)
		})
	}
}

// raw sends one request and returns its status code and, for failures, the API error.
func raw(t *testing.T, cfg *rest.Config, method, path, contentType, body string) (int, error) {
	t.Helper()
	c, err := rest.UnversionedRESTClientFor(withNegotiation(cfg))
	if err != nil {
		t.Fatal(err)
	}
	path, query, _ := strings.Cut(path, "?")
	req := c.Verb(method).AbsPath(path)
	if query != "" {
		values, _ := url.ParseQuery(query)
		for k, vs := range values {
			for _, v := range vs {
				req.Param(k, v)
			}
		}
	}
	if contentType != "" {
		req.SetHeader("Content-Type", contentType)
	}
	if body != "" {
		req.Body([]byte(body))
	}
	var code int
	res := req.Do(context.Background()).StatusCode(&code)
	err = res.Error()
	if err != nil && !apierrors.IsNotFound(err) && code == 0 {
		code = http.StatusInternalServerError
	}
	return code, err
}

func withNegotiation(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = nil
	c.APIPath = "/apis"
	c.NegotiatedSerializer = unstructuredSerializer()
	return c
}

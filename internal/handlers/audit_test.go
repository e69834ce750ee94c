package handlers_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/lapis-dev/lapis/internal/audit"
)

// auditPolicy gives each resource the level the tests below expect of it.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resources: [{group: "", resources: ["secrets"]}]
- level: RequestResponse
  resources: [{group: "", resources: ["configmaps"]}]
- level: Request
  resources: [{group: "", resources: ["serviceaccounts"]}]
- level: None
`

// newAuditedFixture is the fixture behind kube's audit filters, as server/chain.go puts them,
// with every request made by one user; it returns the audit log's path.
func newAuditedFixture(t *testing.T) (*fixture, string) {
	f := newFixture(t)
	dir := t.TempDir()
	policy, log := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := audit.DefaultOptions()
	opts.LogPath, opts.PolicyFile = log, policy
	a, err := audit.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown() })
	h := a.WithAudit(f.handler)
	authenticated := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		u := &user.DefaultInfo{Name: "tester", Groups: []string{"system:authenticated"}}
		h.ServeHTTP(w, req.WithContext(apirequest.WithUser(req.Context(), u)))
	})
	resolver := &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	srv := httptest.NewServer(audit.WithAuditInit(genericfilters.WithRequestInfo(authenticated, resolver)))
	t.Cleanup(srv.Close)
	return &fixture{t: t, handler: srv.Config.Handler, url: srv.URL}, log
}

// auditEvents reads the log's events of the request with the given audit ID.
func auditEvents(t *testing.T, path, auditID string) (events []auditv1.Event, raw string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	var lines []string
	for s.Scan() {
		var e auditv1.Event
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			t.Fatalf("audit log line is not an event: %v: %s", err, s.Text())
		}
		if string(e.AuditID) == auditID {
			events = append(events, e)
			lines = append(lines, s.Text())
		}
	}
	return events, strings.Join(lines, "\n")
}

// TestAuditObjects checks what lapis's handlers add to audit events, per level, against what
// kube-apiserver 1.37 records for the same requests (kube-reference): request objects (bodies,
// patches in JSON, DeleteOptions as meta.k8s.io/__internal), response objects and Statuses,
// the objectRef named by a created object, and nothing of a Secret at Metadata level.
func TestAuditObjects(t *testing.T) {
	f, log := newAuditedFixture(t)
	const secretValue = "aHVudGVyMg==" // "hunter2"
	tests := []struct {
		name  string
		call  call
		code  int
		level auditv1.Level
		// Wanted in the ResponseComplete event; "" means absent.
		objectName, requestObject, responseKind string
		responseReason                          string
		forbidden                               []string // substrings the events must not hold
	}{{
		name: "create configmap", code: 201, level: auditv1.LevelRequestResponse,
		call:       call{method: "POST", path: configMaps, body: configMapJSON("audited", map[string]string{"k": "v"})},
		objectName: "audited", requestObject: `{"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"name":"audited"}}`, responseKind: "ConfigMap",
	}, {
		name: "get configmap", code: 200, level: auditv1.LevelRequestResponse,
		call:       call{method: "GET", path: configMaps + "/audited"},
		objectName: "audited", responseKind: "ConfigMap",
	}, {
		name: "list configmaps", code: 200, level: auditv1.LevelRequestResponse,
		call:         call{method: "GET", path: configMaps},
		responseKind: "ConfigMapList",
	}, {
		name: "merge patch", code: 200, level: auditv1.LevelRequestResponse,
		call:       call{method: "PATCH", path: configMaps + "/audited", body: `{"data":{"k2":"v2"}}`, headers: []string{"Content-Type: application/merge-patch+json"}},
		objectName: "audited", requestObject: `{"data":{"k2":"v2"}}`, responseKind: "ConfigMap",
	}, {
		name: "apply in YAML, recorded in JSON", code: 201, level: auditv1.LevelRequestResponse,
		call: call{method: "PATCH", path: configMaps + "/applied?fieldManager=test", body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: b\n",
			headers: []string{"Content-Type: application/apply-patch+yaml"}},
		objectName: "applied", requestObject: `{"apiVersion":"v1","data":{"a":"b"},"kind":"ConfigMap","metadata":{"name":"applied"}}`, responseKind: "ConfigMap",
	}, {
		name: "not found", code: 404, level: auditv1.LevelRequestResponse,
		call:       call{method: "GET", path: configMaps + "/missing"},
		objectName: "missing", responseKind: "Status", responseReason: "NotFound",
	}, {
		name: "delete with options", code: 200, level: auditv1.LevelRequestResponse,
		call:       call{method: "DELETE", path: configMaps + "/applied", body: `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","propagationPolicy":"Background"}`},
		objectName: "applied", requestObject: `{"apiVersion":"meta.k8s.io/__internal","kind":"DeleteOptions","propagationPolicy":"Background"}`, responseKind: "Status",
	}, {
		name: "secret create at Metadata", code: 201, level: auditv1.LevelMetadata,
		call:       call{method: "POST", path: secrets, body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"password":"` + secretValue + `"}}`},
		objectName: "s", forbidden: []string{secretValue, "hunter2", "password"},
	}, {
		name: "secret read at Metadata", code: 200, level: auditv1.LevelMetadata,
		call:       call{method: "GET", path: secrets + "/s"},
		objectName: "s", forbidden: []string{secretValue, "password"},
	}, {
		name: "secret missing at Metadata: the Status kept", code: 404, level: auditv1.LevelMetadata,
		call:       call{method: "GET", path: secrets + "/nope"},
		objectName: "nope", responseReason: "NotFound",
	}, {
		name: "serviceaccount at Request: request object only", code: 201, level: auditv1.LevelRequest,
		call:       call{method: "POST", path: "/api/v1/namespaces/default/serviceaccounts", body: `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa"}}`},
		objectName: "sa", requestObject: `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa"}}`,
	}, {
		name: "level None: no event", code: 200,
		call: call{method: "GET", path: "/api/v1/namespaces/default"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := f.do(tc.call)
			if r.code != tc.code {
				t.Fatalf("code %d, want %d: %s", r.code, tc.code, r.body)
			}
			id := r.header.Get("Audit-Id")
			if id == "" {
				t.Fatal("no Audit-Id header")
			}
			events, raw := auditEvents(t, log, id)
			if tc.level == "" {
				if len(events) != 0 {
					t.Fatalf("level None recorded %d events", len(events))
				}
				return
			}
			if len(events) != 2 || events[0].Stage != auditv1.StageRequestReceived || events[1].Stage != auditv1.StageResponseComplete {
				t.Fatalf("want RequestReceived and ResponseComplete, got %s", raw)
			}
			for _, s := range tc.forbidden {
				if strings.Contains(raw, s) {
					t.Errorf("events hold %q: %s", s, raw)
				}
			}
			e := events[1]
			if e.Level != tc.level || e.User.Username != "tester" || e.ResponseStatus == nil || e.ResponseStatus.Code != int32(tc.code) {
				t.Fatalf("level %s, user %q, status %+v; want %s, tester, %d", e.Level, e.User.Username, e.ResponseStatus, tc.level, tc.code)
			}
			if string(e.ResponseStatus.Reason) != tc.responseReason {
				t.Errorf("responseStatus reason %q, want %q", e.ResponseStatus.Reason, tc.responseReason)
			}
			if e.ObjectRef == nil || e.ObjectRef.Name != tc.objectName {
				t.Errorf("objectRef %+v, want name %q", e.ObjectRef, tc.objectName)
			}
			got := ""
			if e.RequestObject != nil {
				got = string(e.RequestObject.Raw)
			}
			if !sameJSON(got, tc.requestObject) {
				t.Errorf("requestObject\n got: %s\nwant: %s", got, tc.requestObject)
			}
			kind := ""
			if e.ResponseObject != nil {
				var m struct{ Kind string }
				_ = json.Unmarshal(e.ResponseObject.Raw, &m)
				kind = m.Kind
			}
			if kind != tc.responseKind {
				t.Errorf("responseObject kind %q, want %q", kind, tc.responseKind)
			}
		})
	}
}

// sameJSON says whether two JSON texts (or two empty strings) hold the same value.
func sameJSON(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	var x, y any
	return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && deepEqualJSON(x, y)
}

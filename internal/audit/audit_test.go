package audit_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	kubeaudit "k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/lapis-dev/lapis/internal/audit"
)

const policy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  users: ["quiet"]
- level: Metadata
  resources: [{group: "", resources: ["secrets"]}]
- level: Request
  resources: [{group: "", resources: ["serviceaccounts"]}]
- level: RequestResponse
  resources: [{group: "", resources: ["configmaps"]}]
- level: Metadata
  omitStages: ["RequestReceived"]
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOptions(t *testing.T) {
	good := writeFile(t, "policy.yaml", policy)
	bad := writeFile(t, "bad.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n")
	logPath := filepath.Join(t.TempDir(), "sub", "audit.log")
	tests := []struct {
		name    string
		opts    func(o *audit.Options)
		wantErr string
		enabled bool
	}{
		{name: "nothing asked", opts: func(*audit.Options) {}},
		{name: "a policy without a log records nothing", opts: func(o *audit.Options) { o.PolicyFile = good }},
		{name: "a log without a policy records nothing (as kube)", opts: func(o *audit.Options) { o.LogPath = logPath }},
		{name: "log and policy", opts: func(o *audit.Options) { o.LogPath, o.PolicyFile = logPath, good }, enabled: true},
		{name: "not rotated", opts: func(o *audit.Options) { o.LogPath, o.PolicyFile, o.MaxSize = logPath, good, 0 }, enabled: true},
		{name: "standard output", opts: func(o *audit.Options) { o.LogPath, o.PolicyFile = "-", good }, enabled: true},
		{name: "bad policy", opts: func(o *audit.Options) { o.PolicyFile = bad }, wantErr: "loading audit policy file"},
		{name: "missing policy", opts: func(o *audit.Options) { o.PolicyFile = bad + ".none" }, wantErr: "loading audit policy file"},
		{name: "bad format", opts: func(o *audit.Options) { o.LogPath, o.PolicyFile, o.Format = logPath, good, "xml" }, wantErr: "invalid audit log format xml"},
		{name: "negative maxage", opts: func(o *audit.Options) { o.LogPath, o.MaxAge = logPath, -1 }, wantErr: "--audit-log-maxage -1 can't be a negative number"},
		{name: "negative maxsize", opts: func(o *audit.Options) { o.LogPath, o.MaxSize = logPath, -1 }, wantErr: "--audit-log-maxsize"},
		{name: "negative maxbackup", opts: func(o *audit.Options) { o.LogPath, o.MaxBackups = logPath, -1 }, wantErr: "--audit-log-maxbackup"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := audit.DefaultOptions()
			tc.opts(&o)
			a, err := audit.New(o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer a.Shutdown()
			if a.Enabled() != tc.enabled {
				t.Fatalf("enabled %v, want %v", a.Enabled(), tc.enabled)
			}
		})
	}
}

// chain is kube's filters around handler as lapis's server orders them, every request made by
// the user named in the X-Test-User header.
func chain(a *audit.Auditing, handler http.Handler) http.Handler {
	h := a.WithAudit(handler)
	authenticated := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		name := req.Header.Get("X-Test-User")
		if name == "" {
			a.WithFailedAuthenticationAudit(genericfilters.Unauthorized(scheme.Codecs)).ServeHTTP(w, req)
			return
		}
		u := &user.DefaultInfo{Name: name, Groups: []string{"system:authenticated"}}
		h.ServeHTTP(w, req.WithContext(apirequest.WithUser(req.Context(), u)))
	})
	resolver := &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	return audit.WithAuditInit(genericfilters.WithRequestInfo(authenticated, resolver))
}

// objectHandler answers as a REST handler does, recording its request and response objects with
// kube's audit functions: a Secret for secrets, a ConfigMap otherwise; watches stream.
func objectHandler(w http.ResponseWriter, req *http.Request) {
	ctx := req.Context()
	info, _ := apirequest.RequestInfoFrom(ctx)
	gvr := corev1.SchemeGroupVersion.WithResource(info.Resource)
	var obj runtime.Object
	if info.Resource == "secrets" {
		obj = &corev1.Secret{TypeMeta: metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"},
			Data: map[string][]byte{"password": []byte("hunter2")}}
	} else {
		obj = &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}, Data: map[string]string{"k": "v"}}
	}
	if info.Verb == "create" {
		kubeaudit.LogRequestObject(ctx, obj, corev1.SchemeGroupVersion, gvr, "", scheme.Codecs)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if info.Verb != "watch" {
		kubeaudit.LogResponseObject(ctx, obj, corev1.SchemeGroupVersion, scheme.Codecs)
	}
	_ = json.NewEncoder(w).Encode(obj)
}

// TestEvents checks kube's stages, levels and objects per policy rule, and that a Secret's data
// never reaches a Metadata-level event.
func TestEvents(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.log")
	o := audit.DefaultOptions()
	o.LogPath, o.PolicyFile = logPath, writeFile(t, "policy.yaml", policy)
	a, err := audit.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown()
	srv := httptest.NewServer(chain(a, http.HandlerFunc(objectHandler)))
	defer srv.Close()

	tests := []struct {
		name, method, path, user string
		level                    auditv1.Level
		stages                   []auditv1.Stage
		code                     int32
		request, response        bool
		forbidden                []string
	}{{
		name: "secret create at Metadata", method: "POST", path: "/api/v1/namespaces/ns/secrets", user: "alice",
		level: auditv1.LevelMetadata, stages: []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseComplete}, code: 200,
		forbidden: []string{"hunter2", "aHVudGVyMg==", "password"},
	}, {
		name: "secret read at Metadata", method: "GET", path: "/api/v1/namespaces/ns/secrets/s", user: "alice",
		level: auditv1.LevelMetadata, stages: []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseComplete}, code: 200,
		forbidden: []string{"hunter2", "aHVudGVyMg==", "password"},
	}, {
		name: "serviceaccount at Request", method: "POST", path: "/api/v1/namespaces/ns/serviceaccounts", user: "alice",
		level: auditv1.LevelRequest, stages: []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseComplete}, code: 200,
		request: true,
	}, {
		name: "configmap at RequestResponse", method: "POST", path: "/api/v1/namespaces/ns/configmaps", user: "alice",
		level: auditv1.LevelRequestResponse, stages: []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseComplete}, code: 200,
		request: true, response: true,
	}, {
		name: "watch: ResponseStarted too, no objects", method: "GET", path: "/api/v1/namespaces/ns/configmaps?watch=true", user: "alice",
		level: auditv1.LevelRequestResponse, stages: []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseStarted, auditv1.StageResponseComplete}, code: 200,
	}, {
		name: "omitted stage", method: "GET", path: "/api/v1/namespaces/ns/pods", user: "alice",
		level: auditv1.LevelMetadata, stages: []auditv1.Stage{auditv1.StageResponseComplete}, code: 200,
	}, {
		name: "level None", method: "GET", path: "/api/v1/namespaces/ns/configmaps/cm", user: "quiet",
	}, {
		name: "unauthenticated", method: "GET", path: "/api/v1/namespaces/ns/configmaps/cm",
		level: auditv1.LevelRequestResponse, stages: []auditv1.Stage{auditv1.StageResponseStarted}, code: 401, response: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader("{}"))
			if tc.user != "" {
				req.Header.Set("X-Test-User", tc.user)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			id := resp.Header.Get("Audit-Id")
			if id == "" {
				t.Fatal("no Audit-Id header")
			}
			events, raw := readEvents(t, logPath, id)
			if len(events) != len(tc.stages) {
				t.Fatalf("%d events, want stages %v: %s", len(events), tc.stages, raw)
			}
			for i, e := range events {
				if e.Stage != tc.stages[i] || e.Level != tc.level {
					t.Errorf("event %d: stage %s level %s, want %s %s", i, e.Stage, e.Level, tc.stages[i], tc.level)
				}
			}
			for _, s := range tc.forbidden {
				if strings.Contains(raw, s) {
					t.Errorf("events hold %q: %s", s, raw)
				}
			}
			if len(events) == 0 {
				return
			}
			last := events[len(events)-1]
			if last.ResponseStatus == nil || last.ResponseStatus.Code != tc.code {
				t.Errorf("responseStatus %+v, want code %d", last.ResponseStatus, tc.code)
			}
			if (last.RequestObject != nil) != tc.request || (last.ResponseObject != nil) != tc.response {
				t.Errorf("requestObject %v, responseObject %v; want %v, %v", last.RequestObject != nil, last.ResponseObject != nil, tc.request, tc.response)
			}
		})
	}
}

func readEvents(t *testing.T, path, auditID string) ([]auditv1.Event, string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []auditv1.Event
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		var e auditv1.Event
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			t.Fatalf("not an event: %s", s.Text())
		}
		if string(e.AuditID) == auditID {
			events = append(events, e)
			lines = append(lines, s.Text())
		}
	}
	return events, strings.Join(lines, "\n")
}

// TestLegacyFormat checks --audit-log-format legacy: kube's one line of text per event.
func TestLegacyFormat(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.log")
	o := audit.DefaultOptions()
	o.LogPath, o.PolicyFile, o.Format = logPath, writeFile(t, "policy.yaml", policy), "legacy"
	a, err := audit.New(o)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown()
	srv := httptest.NewServer(chain(a, http.HandlerFunc(objectHandler)))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/namespaces/ns/configmaps/cm", nil)
	req.Header.Set("X-Test-User", "alice")
	req.Header.Set("Audit-ID", "my-audit-id")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Audit-Id"); got != "my-audit-id" {
		t.Errorf("Audit-Id %q, want the client's own", got)
	}
	raw, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2: %s", len(lines), raw)
	}
	for i, stage := range []string{"RequestReceived", "ResponseComplete"} {
		for _, want := range []string{` AUDIT: id="my-audit-id" stage="` + stage + `"`, ` method="get" user="alice"`, ` uri="/api/v1/namespaces/ns/configmaps/cm"`} {
			if !strings.Contains(lines[i], want) {
				t.Errorf("line %d %q lacks %q", i, lines[i], want)
			}
		}
	}
	if !strings.Contains(lines[1], ` response="200"`) {
		t.Errorf("last line %q lacks the response code", lines[1])
	}
}

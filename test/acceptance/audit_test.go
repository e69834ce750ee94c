package acceptance

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// auditTestPolicy records ConfigMaps with their objects, Secrets without, and every other
// request at Metadata level.
const auditTestPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  resources: [{group: "", resources: ["secrets"]}]
- level: RequestResponse
  resources: [{group: "", resources: ["configmaps"]}]
- level: Metadata
`

// TestAuditLog runs lapis with kube-apiserver's --audit-log-path and --audit-policy-file and
// checks the events of a create, a get, a server-side apply, a Secret, a watch and a refused
// request against what kube-apiserver 1.37 logs for the same kubectl commands (kube-reference):
// stages, verbs, objectRefs, users, codes, authorization annotations, and objects only at the
// levels that carry them.
func TestAuditLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.log")
	l := startLapis(t, "--audit-log-path", logPath, "--audit-policy-file", writeFile(t, "policy.yaml", auditTestPolicy))

	l.must(t, "create", "configmap", "audited", "--from-literal=a=b", "-n", "default")
	l.must(t, "get", "configmap", "audited", "-n", "default")
	l.mustIn(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: applied, namespace: default}\ndata: {x: z}\n", "apply", "--server-side", "-f", "-")
	l.must(t, "create", "secret", "generic", "hidden", "--from-literal=password=hunter2", "-n", "default")
	if code, body := l.do(t, "GET", "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1", "", "", true); code != 200 {
		t.Fatalf("watch: %d %s", code, body)
	}
	if code, body := l.do(t, "GET", "/api/v1/namespaces/default/configmaps", "", "", false); code != 403 {
		t.Fatalf("anonymous list: %d %s", code, body)
	}

	// Events are written before each answer is sent (kube's blocking mode).
	events, raw := readAuditLog(t, logPath)
	for _, secret := range []string{"hunter2", "aHVudGVyMg=="} {
		if strings.Contains(raw, secret) {
			t.Errorf("the audit log holds the Secret's data %q", secret)
		}
	}
	byRequest := map[string][]auditv1.Event{}
	var order []string
	for _, e := range events {
		id := string(e.AuditID)
		if byRequest[id] == nil {
			order = append(order, id)
		}
		byRequest[id] = append(byRequest[id], e)
	}
	// find returns the events of the first request of user with verb on resource (name if set).
	find := func(user, verb, resource, name string) []auditv1.Event {
		t.Helper()
		for _, id := range order {
			e := byRequest[id][len(byRequest[id])-1]
			if e.User.Username == user && e.Verb == verb && e.ObjectRef != nil && e.ObjectRef.Resource == resource && (name == "" || e.ObjectRef.Name == name) {
				return byRequest[id]
			}
		}
		t.Fatalf("no audit event of %s %s %s %s in:\n%s", user, verb, resource, name, raw)
		return nil
	}
	tests := []struct {
		name, user, verb, resource, objectName string
		level                                  auditv1.Level
		stages                                 []auditv1.Stage
		code                                   int32
		decision                               string
		requestObject                          string // JSON, "" when absent
		responseObject                         bool
	}{{
		name: "create", user: "admin", verb: "create", resource: "configmaps", objectName: "audited",
		level: auditv1.LevelRequestResponse, code: 201, decision: "allow",
		requestObject:  `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"audited","namespace":"default"},"data":{"a":"b"}}`,
		responseObject: true,
	}, {
		name: "get", user: "admin", verb: "get", resource: "configmaps", objectName: "audited",
		level: auditv1.LevelRequestResponse, code: 200, decision: "allow", responseObject: true,
	}, {
		name: "server-side apply", user: "admin", verb: "patch", resource: "configmaps", objectName: "applied",
		level: auditv1.LevelRequestResponse, code: 201, decision: "allow",
		requestObject:  `{"apiVersion":"v1","data":{"x":"z"},"kind":"ConfigMap","metadata":{"name":"applied","namespace":"default"}}`,
		responseObject: true,
	}, {
		name: "secret at Metadata", user: "admin", verb: "create", resource: "secrets", objectName: "hidden",
		level: auditv1.LevelMetadata, code: 201, decision: "allow",
	}, {
		name: "watch", user: "admin", verb: "watch", resource: "configmaps",
		level: auditv1.LevelRequestResponse, code: 200, decision: "allow",
		stages: []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseStarted, auditv1.StageResponseComplete},
	}, {
		name: "refused", user: "system:anonymous", verb: "list", resource: "configmaps",
		level: auditv1.LevelRequestResponse, code: 403, decision: "forbid", responseObject: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := find(tc.user, tc.verb, tc.resource, tc.objectName)
			stages := tc.stages
			if stages == nil {
				stages = []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseComplete}
			}
			if len(got) != len(stages) {
				t.Fatalf("%d events, want stages %v", len(got), stages)
			}
			for i, e := range got {
				if e.Stage != stages[i] || e.Level != tc.level || e.ObjectRef.Namespace != "default" || e.ObjectRef.APIVersion != "v1" {
					t.Errorf("event %d: stage %s, level %s, objectRef %+v; want %s, %s, namespace default, v1", i, e.Stage, e.Level, e.ObjectRef, stages[i], tc.level)
				}
				if len(e.SourceIPs) == 0 || e.UserAgent == "" {
					t.Errorf("event %d: no source IPs or user agent", i)
				}
			}
			last := got[len(got)-1]
			if last.ResponseStatus == nil || last.ResponseStatus.Code != tc.code {
				t.Errorf("responseStatus %+v, want code %d", last.ResponseStatus, tc.code)
			}
			if tc.code == 403 && (last.ResponseStatus.Reason != "Forbidden" || !strings.Contains(last.ResponseStatus.Message, `User "system:anonymous" cannot list resource "configmaps"`)) {
				t.Errorf("refusal's responseStatus %+v", last.ResponseStatus)
			}
			if d := last.Annotations["authorization.k8s.io/decision"]; d != tc.decision {
				t.Errorf("authorization decision %q, want %q", d, tc.decision)
			}
			if _, ok := last.Annotations["authorization.k8s.io/reason"]; !ok {
				t.Errorf("no authorization reason annotation: %v", last.Annotations)
			}
			var request string
			if last.RequestObject != nil {
				request = string(last.RequestObject.Raw)
			}
			if !jsonEqual(request, tc.requestObject) {
				t.Errorf("requestObject\n got: %s\nwant: %s", request, tc.requestObject)
			}
			if (last.ResponseObject != nil) != tc.responseObject {
				t.Errorf("responseObject present %v, want %v", last.ResponseObject != nil, tc.responseObject)
			}
		})
	}
}

// readAuditLog reads every event of a JSON audit log.
func readAuditLog(t *testing.T, path string) ([]auditv1.Event, string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var events []auditv1.Event
	s := bufio.NewScanner(strings.NewReader(string(raw)))
	s.Buffer(nil, 4<<20)
	for s.Scan() {
		var e auditv1.Event
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			t.Fatalf("audit log line is not an event: %v: %s", err, s.Text())
		}
		events = append(events, e)
	}
	return events, string(raw)
}

// jsonEqual says whether two JSON texts (or two empty strings) hold the same value.
func jsonEqual(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// TestRequestLogVerbosity checks kube-apiserver's request log: at -v=3 each request is logged
// as kube's httplog logs it ("HTTP" verb=… URI=… latency=… userAgent=… audit-ID=… srcIP=…
// resp=…), at the default verbosity none is.
func TestRequestLogVerbosity(t *testing.T) {
	const path = "/api/v1/namespaces/default/configmaps/verbosity-probe"
	tests := []struct {
		name   string
		flags  []string
		logged bool
	}{
		{name: "-v=3", flags: []string{"-v=3"}, logged: true},
		{name: "--v 3", flags: []string{"--v", "3"}, logged: true},
		{name: "-v=2", flags: []string{"-v=2"}},
		{name: "default", flags: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := startLapis(t, tc.flags...)
			if code, body := l.do(t, "GET", path, "", "", true); code != 404 {
				t.Fatalf("GET %s: %d %s", path, code, body)
			}
			line := func() string {
				for _, line := range strings.Split(l.log.String(), "\n") {
					if strings.Contains(line, `"HTTP" verb="GET" URI="`+path+`"`) {
						return line
					}
				}
				return ""
			}
			if !tc.logged {
				time.Sleep(200 * time.Millisecond)
				if got := line(); got != "" || strings.Contains(l.log.String(), `"HTTP"`) {
					t.Fatalf("request logged at %s: %s", tc.name, got)
				}
				return
			}
			poll.Eventually(t, 5*time.Second, "the request logged", func() (bool, string) { return line() != "", lapisTail(l) })
			got := line()
			for _, want := range []string{"httplog.go:", ` latency="`, ` userAgent="Go-http-client/`, ` audit-ID="`, ` srcIP="127.0.0.1:`, ` resp=404`} {
				if !strings.Contains(got, want) {
					t.Errorf("request log line %q lacks %q", got, want)
				}
			}
		})
	}
}

func lapisTail(l *lapisProc) string {
	s := l.log.String()
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

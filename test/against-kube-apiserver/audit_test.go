package againstkube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/audit"
)

// auditNamespace is the namespace whose requests both servers audit (auditPolicy): the other
// tests' requests are not recorded, and cost nothing.
const auditNamespace = "kubediff-audit"

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
  namespaces: ["` + auditNamespace + `"]
  resources: [{group: "", resources: ["secrets"]}]
- level: Request
  namespaces: ["` + auditNamespace + `"]
  resources: [{group: "", resources: ["serviceaccounts"]}]
- level: RequestResponse
  namespaces: ["` + auditNamespace + `"]
  omitManagedFields: true
  resources: [{group: "apps"}]
- level: RequestResponse
  namespaces: ["` + auditNamespace + `"]
- level: None
`

// auditFiles are the policy both servers read and the logs they write, under the test's dir.
func auditFiles(dir string) (policy, lapisLog, kubeLog string) {
	return filepath.Join(dir, "audit-policy.yaml"), filepath.Join(dir, "lapis-audit.log"), filepath.Join(dir, "kube-audit.log")
}

// auditSetup writes the policy and returns lapis's audit options and kube-apiserver's flags.
func auditSetup(dir string) (audit.Options, string, error) {
	policy, lapisLog, kubeLog := auditFiles(dir)
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return audit.Options{}, "", err
	}
	o := audit.DefaultOptions()
	o.LogPath, o.PolicyFile = lapisLog, policy
	return o, fmt.Sprintf("--audit-log-path=%s --audit-policy-file=%s", kubeLog, policy), nil
}

// auditStep is one request sent to both servers with the same Audit-ID.
type auditStep struct {
	name, method, path, contentType, body string
	headers                               []string
}

// TestAudit sends the same requests to both servers and compares their audit events, stage by
// stage: levels, verbs, objectRefs, users (and impersonated users), response statuses,
// annotations, and the request and response objects each level keeps. What differs by nature
// (IDs, times, UIDs, resource versions, the admin's credential) is masked.
func TestAudit(t *testing.T) {
	lapis, kube := servers(t)
	ns := "/api/v1/namespaces/" + auditNamespace
	cm := ns + "/configmaps"
	deploy := "/apis/apps/v1/namespaces/" + auditNamespace + "/deployments"
	auditWidgets := "/apis/kubediff.example.com/v1/namespaces/" + auditNamespace + "/widgets" // harness's CRD
	steps := []auditStep{
		{name: "namespace", method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + auditNamespace + `"}}`},
		{name: "create", method: "POST", path: cm + "?fieldManager=kubediff", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1"},"data":{"a":"b"}}`},
		{name: "get", method: "GET", path: cm + "/cm1"},
		{name: "get as Table", method: "GET", path: cm + "/cm1", headers: []string{"Accept: application/json;as=Table;v=v1;g=meta.k8s.io"}},
		{name: "get in Protobuf", method: "GET", path: cm + "/cm1", headers: []string{"Accept: application/vnd.kubernetes.protobuf"}},
		{name: "get in YAML", method: "GET", path: cm + "/cm1", headers: []string{"Accept: application/yaml"}},
		{name: "merge patch", method: "PATCH", path: cm + "/cm1", contentType: "application/merge-patch+json", body: `{"data":{"c":"d"}}`},
		{name: "json patch", method: "PATCH", path: cm + "/cm1", contentType: "application/json-patch+json", body: `[{"op":"add","path":"/data/e","value":"f"}]`},
		{name: "apply", method: "PATCH", path: cm + "/cm2?fieldManager=kubediff", contentType: "application/apply-patch+yaml",
			body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm2\ndata:\n  x: z\n"},
		{name: "update", method: "PUT", path: cm + "/cm1", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1","namespace":"` + auditNamespace + `"},"data":{"a":"updated"}}`},
		// Without the root CA ConfigMap, which kube-controller-manager publishes when it gets to it.
		{name: "list", method: "GET", path: cm + "?fieldSelector=metadata.name%21%3Dkube-root-ca.crt"},
		{name: "watch", method: "GET", path: cm + "?watch=true&timeoutSeconds=1"},
		{name: "secret", method: "POST", path: ns + "/secrets", body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1"},"data":{"password":"aHVudGVyMg=="}}`},
		{name: "secret read", method: "GET", path: ns + "/secrets/s1"},
		{name: "serviceaccount at Request", method: "POST", path: ns + "/serviceaccounts", body: `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa1"}}`},
		{name: "deployment with defaults", method: "POST", path: deploy, body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d1"},` +
			`"spec":{"selector":{"matchLabels":{"app":"d1"}},"template":{"metadata":{"labels":{"app":"d1"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`},
		{name: "scale read", method: "GET", path: deploy + "/d1/scale"},
		{name: "scale patch", method: "PATCH", path: deploy + "/d1/scale", contentType: "application/merge-patch+json", body: `{"spec":{"replicas":2}}`},
		{name: "status patch", method: "PATCH", path: deploy + "/d1/status", contentType: "application/merge-patch+json", body: `{"status":{"observedGeneration":1}}`},
		{name: "access review", method: "POST", path: "/apis/authorization.k8s.io/v1/namespaces/" + auditNamespace + "/localsubjectaccessreviews",
			body: `{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"nobody","resourceAttributes":{"namespace":"` + auditNamespace + `","verb":"get","resource":"configmaps"}}}`},
		{name: "custom resource", method: "POST", path: auditWidgets, body: `{"apiVersion":"kubediff.example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"replicas":1}}`},
		{name: "custom resource read", method: "GET", path: auditWidgets + "/w1"},
		{name: "custom resource patch", method: "PATCH", path: auditWidgets + "/w1", contentType: "application/merge-patch+json", body: `{"spec":{"color":"red"}}`},
		{name: "custom resource status", method: "PATCH", path: auditWidgets + "/w1/status", contentType: "application/merge-patch+json", body: `{"status":{"replicas":1}}`},
		{name: "custom resources listed", method: "GET", path: auditWidgets},
		{name: "dry run", method: "POST", path: cm + "?dryRun=All", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dry"}}`},
		{name: "invalid", method: "POST", path: cm, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Not_Valid"}}`},
		{name: "conflict", method: "POST", path: cm, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1"}}`},
		{name: "not found", method: "GET", path: cm + "/missing"},
		{name: "impersonated and refused", method: "GET", path: cm, headers: []string{"Impersonate-User: nobody"}},
		{name: "delete with options", method: "DELETE", path: cm + "/cm2", body: `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/v1","propagationPolicy":"Background"}`},
		{name: "delete collection", method: "DELETE", path: cm + "?labelSelector=none%3Dnone"},
		{name: "namespace deleted", method: "DELETE", path: ns},
	}
	_, lapisLog, kubeLog := auditFiles(env.auditDir)
	for i, s := range steps {
		id := fmt.Sprintf("kubediff-audit-%d", i)
		lapisCode, kubeCode := sendAudited(t, lapis, s, id), sendAudited(t, kube, s, id)
		if lapisCode != kubeCode {
			t.Errorf("%s: lapis answered %d, kube %d", s.name, lapisCode, kubeCode)
		}
	}
	// Both servers write an event before answering, but a watch's last one may follow its end.
	time.Sleep(200 * time.Millisecond)
	lapisEvents, kubeEvents := auditEventsByID(t, lapisLog), auditEventsByID(t, kubeLog)
	for i, s := range steps {
		id := fmt.Sprintf("kubediff-audit-%d", i)
		l, k := lapisEvents[id], kubeEvents[id]
		if len(k) == 0 && s.name != "namespace" && s.name != "namespace deleted" {
			t.Errorf("%s: kube-apiserver recorded no event (the test's policy is wrong)", s.name)
		}
		if lj, kj := pretty(l), pretty(k); lj != kj {
			t.Errorf("%s: audit events differ\nlapis: %s\n kube: %s", s.name, lj, kj)
		}
	}
}

// sendAudited sends s to tg with Audit-ID id and returns the status code.
func sendAudited(t *testing.T, tg *target, s auditStep, id string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := tg.newRequest(ctx, s.method, s.path, s.body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "kubediff-audit")
	req.Header.Set("Audit-ID", id)
	if s.body != "" {
		ct := s.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	for _, h := range s.headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(k, strings.TrimSpace(v))
	}
	resp, err := tg.client.Do(req)
	if err != nil {
		t.Fatalf("%s: %s: %v", tg.name, s.name, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if got := resp.Header.Get("Audit-Id"); got != id {
		t.Errorf("%s: %s: Audit-Id %q, want the client's %q", tg.name, s.name, got, id)
	}
	return resp.StatusCode
}

// auditEventsByID reads a JSON audit log, each event masked, by audit ID.
func auditEventsByID(t *testing.T, path string) map[string][]map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]map[string]any{}
	s := bufio.NewScanner(f)
	s.Buffer(nil, 8<<20)
	for s.Scan() {
		var e map[string]any
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			t.Fatalf("%s: not an event: %s", path, s.Text())
		}
		id, _ := e["auditID"].(string)
		if !strings.HasPrefix(id, "kubediff-audit-") {
			continue
		}
		maskEvent(e)
		out[id] = append(out[id], e)
	}
	return out
}

// maskEvent drops what differs between any two servers: times, the admin's credential, object
// UIDs, resource versions, creation and managed-field times, latency annotations.
func maskEvent(e map[string]any) {
	delete(e, "requestReceivedTimestamp")
	delete(e, "stageTimestamp")
	if u, ok := e["user"].(map[string]any); ok {
		delete(u, "extra")
		delete(u, "uid")
	}
	if ref, ok := e["objectRef"].(map[string]any); ok {
		delete(ref, "uid")
		delete(ref, "resourceVersion")
	}
	if a, ok := e["annotations"].(map[string]any); ok {
		for k := range a {
			if strings.HasPrefix(k, "apiserver.latency.k8s.io/") {
				delete(a, k)
			}
		}
	}
	for _, k := range []string{"requestObject", "responseObject", "responseStatus"} {
		maskObject(e[k])
	}
	// A Table's Age is computed as it is answered: a second apart on two servers.
	if r, ok := e["responseObject"].(map[string]any); ok && r["kind"] == "Table" {
		maskTableAge(r)
	}
	// kube-apiserver lists custom resources with "continue": "" in their metadata, in its
	// answers as in its audit events; lapis leaves it out (a difference of the list answer
	// itself, not of auditing).
	if r, ok := e["responseObject"].(map[string]any); ok {
		if md, ok := r["metadata"].(map[string]any); ok && md["continue"] == "" {
			delete(md, "continue")
		}
	}
}

// maskTableAge replaces the cells of a Table's Age column.
func maskTableAge(table map[string]any) {
	columns, _ := table["columnDefinitions"].([]any)
	for i, c := range columns {
		if col, ok := c.(map[string]any); !ok || col["name"] != "Age" {
			continue
		}
		rows, _ := table["rows"].([]any)
		for _, r := range rows {
			if row, ok := r.(map[string]any); ok {
				if cells, ok := row["cells"].([]any); ok && i < len(cells) {
					cells[i] = "AGE"
				}
			}
		}
	}
}

func maskObject(v any) {
	switch o := v.(type) {
	case map[string]any:
		for k, child := range o {
			switch k {
			case "uid", "resourceVersion", "creationTimestamp", "time", "generateName":
				if _, ok := child.(string); ok {
					delete(o, k)
					continue
				}
			case "ca.crt":
				delete(o, k)
				continue
			}
			maskObject(child)
		}
	case []any:
		for _, child := range o {
			maskObject(child)
		}
	}
}

func pretty(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	return b.String()
}

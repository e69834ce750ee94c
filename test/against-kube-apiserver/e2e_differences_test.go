package againstkube

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestE2EDifferences: the differences Kubernetes' e2e suite found between lapis and
// kube-apiserver in what lapis already served (issue 14), each request compared with kube's
// answer: an invalid ?timeout=, a PUT of a custom resource that does not exist, a merge patch
// of a namespace's status carrying annotations, typed lists' items, and server-side apply's
// conflict with an Update manager that owns metadata.labels as an empty map.
func TestE2EDifferences(t *testing.T) {
	lapis, kube := servers(t)
	both := []*target{lapis, kube}

	t.Run("invalid timeout", func(t *testing.T) {
		for _, path := range []string{configmaps + "?timeout=invalid", widgets + "?timeout=invalid", "/api/v1/namespaces?timeout=1x"} {
			r := request{method: "GET", path: path}
			compare(t, r, send(r, r), allowance{})
		}
	})

	t.Run("unknown and duplicate fields of a typed object, in body order", func(t *testing.T) {
		for _, body := range []string{
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"kd-e2e-dup","labels":{"app":"x"}},"spec":{"unknownField":"foo","replicas":2,"replicas":3,
 "selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"kd-e2e-dup"},"spec":{"replicas":2,"replicas":3,"unknownField":"foo","other":1}}`,
		} {
			r := request{method: "POST", path: "/apis/apps/v1/namespaces/" + ns + "/deployments?fieldValidation=Strict&dryRun=All", contentType: jsonType, body: body}
			compare(t, r, send(r, r), allowance{})
		}
	})

	t.Run("PUT of a custom resource that does not exist", func(t *testing.T) {
		r := request{method: "PUT", path: widgets + "/e2e-missing", contentType: jsonType,
			body: `{"apiVersion":"kubediff.example.com/v1","kind":"Widget","metadata":{"name":"e2e-missing"},"spec":{"size":1}}`}
		compare(t, r, send(r, r), allowance{})
	})

	t.Run("namespace status merge patch keeps annotations", func(t *testing.T) {
		for _, s := range both {
			s.do(request{method: "DELETE", path: "/api/v1/namespaces/kd-e2e-status"})
		}
		for _, s := range both {
			eventually(t, s, "namespace kd-e2e-status created", func() bool {
				return s.do(request{method: "POST", path: "/api/v1/namespaces", contentType: jsonType,
					body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kd-e2e-status","annotations":{"before":"1"}}}`}).code == http.StatusCreated
			})
		}
		r := request{method: "PATCH", path: "/api/v1/namespaces/kd-e2e-status/status", contentType: mergeType,
			body: `{"metadata":{"annotations":{"e2e-patched":"true"}},"status":{"conditions":[{"type":"StatusUpdate","status":"True","reason":"E2E","message":"Set from an e2e test"}]}}`}
		x := send(r, r)
		compare(t, r, x, allowance{})
		for _, s := range []struct {
			name string
			resp response
		}{{"lapis", x.lapis}, {"kube", x.kube}} {
			obj := decodeObject(t, s.resp.body)
			if got := nested(obj, "metadata", "annotations"); !strings.Contains(jsonOf(got), `"before":"1"`) || !strings.Contains(jsonOf(got), `"e2e-patched":"true"`) {
				t.Errorf("%s: annotations after the status patch: %s", s.name, jsonOf(got))
			}
			if got := jsonOf(nested(obj, "status", "conditions")); !strings.Contains(got, `"type":"StatusUpdate"`) {
				t.Errorf("%s: conditions after the status patch: %s", s.name, got)
			}
		}
	})

	t.Run("typed list items carry no kind", func(t *testing.T) {
		r := request{method: "GET", path: "/api/v1/namespaces"}
		x := send(r, r)
		compare(t, r, x, allowance{})
		for _, s := range []struct {
			name string
			resp response
		}{{"lapis", x.lapis}, {"kube", x.kube}} {
			items, _ := decodeObject(t, s.resp.body)["items"].([]any)
			if len(items) == 0 {
				t.Fatalf("%s: no namespaces listed", s.name)
			}
			for _, it := range items {
				m := it.(map[string]any)
				if _, has := m["kind"]; has {
					t.Errorf("%s: a NamespaceList item carries kind %v", s.name, m["kind"])
				}
				if _, has := m["apiVersion"]; has {
					t.Errorf("%s: a NamespaceList item carries apiVersion %v", s.name, m["apiVersion"])
				}
			}
		}
	})

	t.Run("apply conflicts with an Update manager owning empty labels", func(t *testing.T) {
		for _, s := range both {
			s.do(request{method: "DELETE", path: configmaps + "/kd-e2e-labels"})
		}
		for _, s := range both {
			eventually(t, s, "kd-e2e-labels created", func() bool {
				return s.do(request{method: "POST", path: configmaps, contentType: jsonType,
					body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kd-e2e-labels"},"data":{"k":"v"}}`}).code == http.StatusCreated
			})
		}
		steps := []request{
			{method: "PATCH", path: configmaps + "/kd-e2e-labels", contentType: mergeType,
				body: `{"metadata":{"managedFields":[{"manager":"updater","operation":"Update","apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{}}}}]}}`},
			{method: "PATCH", path: configmaps + "/kd-e2e-labels?fieldManager=applier", contentType: applyType,
				body: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kd-e2e-labels, labels: {a: b}}\n"},
			{method: "PATCH", path: configmaps + "/kd-e2e-labels?fieldManager=applier&force=true", contentType: applyType,
				body: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kd-e2e-labels, labels: {a: b}}\n"},
		}
		for _, r := range steps {
			compare(t, r, send(r, r), allowance{})
		}
	})
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

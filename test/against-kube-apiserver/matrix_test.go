package againstkube

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// fixture is an object the verb × subresource matrix works on. Its label selects it alone for
// deletecollection.
type fixture struct {
	name         string
	collection   string // where it is created
	object       string // its path
	manifest     string // its creation body
	subresources []string
	// terminating finishes a deletion kube leaves pending without kube-controller-manager.
	terminating func(t *testing.T, s *target, path string, current []byte)
}

var (
	nsFixture = fixture{
		name:         "namespace",
		collection:   "/api/v1/namespaces",
		object:       "/api/v1/namespaces/kd-ns",
		manifest:     `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kd-ns","labels":{"kubediff":"fixture"}}}`,
		subresources: []string{"status", "finalize", "bogus"},
		terminating:  finishNamespace,
	}
	crdFixture = fixture{
		name:       "crd",
		collection: crds,
		object:     crds + "/targets.kubediff.example.com",
		manifest: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"targets.kubediff.example.com","labels":{"kubediff":"fixture"}},
 "spec":{"group":"kubediff.example.com","scope":"Namespaced",
  "names":{"plural":"targets","singular":"target","kind":"Target","listKind":"TargetList"},
  "versions":[{"name":"v1","served":true,"storage":true,
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`,
		subresources: []string{"status", "bogus"},
	}
	widgetFixture = fixture{
		name:         "custom resource",
		collection:   widgets,
		object:       widgets + "/kd-widget",
		manifest:     `{"apiVersion":"kubediff.example.com/v1","kind":"Widget","metadata":{"name":"kd-widget","labels":{"kubediff":"fixture"}},"spec":{"replicas":1}}`,
		subresources: []string{"status", "scale", "bogus"},
	}
	configMapFixture = fixture{
		name:         "configmap",
		collection:   configmaps,
		object:       configmaps + "/kd-cm",
		manifest:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"kd-cm","labels":{"kubediff":"fixture"}},"data":{"a":"1"}}`,
		subresources: []string{"bogus"},
	}
)

var methods = []string{"GET", "HEAD", "OPTIONS", "POST", "PATCH", "PUT", "DELETE"}

// TestVerbsBySubresource sends every method to each fixture's path and subresource paths, and
// DELETE to its collection, and compares the answers. After each request the object must still
// exist on both servers, unless kube deleted it (then it is recreated for the next case).
func TestVerbsBySubresource(t *testing.T) {
	lapis, kube := servers(t)
	for _, f := range []fixture{nsFixture, crdFixture, widgetFixture, configMapFixture} {
		t.Run(f.name, func(t *testing.T) {
			for _, sub := range append([]string{""}, f.subresources...) {
				for _, method := range methods {
					name := method + " object"
					if sub != "" {
						name = method + " " + sub
					}
					t.Run(name, func(t *testing.T) {
						tmpl := f.request(method, sub)
						x := send(substitute(tmpl, ensure(t, lapis, f)), substitute(tmpl, ensure(t, kube, f)))
						compare(t, tmpl, x, allowance{})
						if !(method == "DELETE" && sub == "" && x.kube.code/100 == 2) {
							stillThere(t, f, tmpl, lapis, kube)
						}
					})
				}
			}
			t.Run("DELETE collection", func(t *testing.T) {
				ensure(t, lapis, f)
				ensure(t, kube, f)
				r := request{method: "DELETE", path: f.collection + "?labelSelector=kubediff%3Dfixture"}
				x := send(r, r)
				compare(t, r, x, allowance{})
				if x.kube.code/100 != 2 {
					stillThere(t, f, r, lapis, kube)
				}
			})
		})
	}
}

// request is the template of a request to f: $OBJECT stands for the object as the server last
// returned it, $RV for its resourceVersion.
func (f fixture) request(method, sub string) request {
	r := request{method: method, path: f.object}
	if sub != "" {
		r.path += "/" + sub
	}
	switch method {
	case "POST":
		r.contentType, r.body = jsonType, f.manifest
	case "PUT":
		r.contentType, r.body = jsonType, "$OBJECT"
		if sub == "scale" {
			r.body = `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"kd-widget","namespace":"` + ns + `","resourceVersion":"$RV"},"spec":{"replicas":2}}`
		}
	case "PATCH":
		r.contentType, r.body = mergeType, `{"metadata":{"labels":{"patched":"yes"}}}`
		if sub == "scale" {
			r.body = `{"spec":{"replicas":3}}`
		}
	}
	return r
}

// current is an object as one server returned it.
type current struct {
	raw []byte
	rv  string
}

func substitute(r request, c current) request {
	r.body = strings.ReplaceAll(r.body, "$OBJECT", string(c.raw))
	r.body = strings.ReplaceAll(r.body, "$RV", c.rv)
	return r
}

// ensure makes f exist on s (not being deleted) and returns it.
func ensure(t *testing.T, s *target, f fixture) current {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp := s.do(request{method: "GET", path: f.object})
		switch resp.code {
		case http.StatusOK:
			var obj struct {
				Metadata struct {
					ResourceVersion   string  `json:"resourceVersion"`
					DeletionTimestamp *string `json:"deletionTimestamp"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(resp.body, &obj); err != nil {
				t.Fatalf("%s: %s: %v", s.name, f.object, err)
			}
			if obj.Metadata.DeletionTimestamp == nil {
				return current{raw: resp.body, rv: obj.Metadata.ResourceVersion}
			}
			if f.terminating != nil {
				f.terminating(t, s, f.object, resp.body)
			}
		case http.StatusNotFound:
			// 409 while a deleted one is still going: try again.
			s.do(request{method: "POST", path: f.collection, contentType: jsonType, body: f.manifest})
			continue
		default:
			t.Fatalf("%s: GET %s: %d %s %v", s.name, f.object, resp.code, resp.body, resp.err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: %s could not be recreated in 60 s", s.name, f.object)
	return current{}
}

// finishNamespace does what kube's namespace controller would: empty the namespace's
// finalizers, then delete it again. (lapis has its own controller; answers are ignored.)
func finishNamespace(t *testing.T, s *target, path string, cur []byte) {
	var obj map[string]any
	if err := json.Unmarshal(cur, &obj); err != nil {
		t.Fatal(err)
	}
	obj["spec"] = map[string]any{"finalizers": []any{}}
	b, _ := json.Marshal(obj)
	s.do(request{method: "PUT", path: path + "/finalize", contentType: jsonType, body: string(b)})
	s.do(request{method: "DELETE", path: path})
}

// stillThere fails t unless f exists, not being deleted, on both servers after r.
func stillThere(t *testing.T, f fixture, r request, servers ...*target) {
	t.Helper()
	for _, s := range servers {
		resp := s.do(request{method: "GET", path: f.object})
		if resp.code != http.StatusOK {
			t.Errorf("%s: after %s the object is gone: GET %s answers %d %s", s.name, r, f.object, resp.code, resp.body)
			continue
		}
		var obj struct {
			Metadata struct {
				DeletionTimestamp *string `json:"deletionTimestamp"`
			} `json:"metadata"`
		}
		if json.Unmarshal(resp.body, &obj) == nil && obj.Metadata.DeletionTimestamp != nil {
			t.Errorf("%s: after %s the object is being deleted", s.name, r)
		}
	}
}

// TestSubresourceWritesToMissingObjects writes to subresources of objects that do not exist:
// nothing may be created, and the answers must be kube's.
func TestSubresourceWritesToMissingObjects(t *testing.T) {
	lapis, kube := servers(t)
	const (
		nsPath     = "/api/v1/namespaces/kd-missing"
		nsBody     = `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kd-missing"}}`
		crdPath    = crds + "/missings.kubediff.example.com"
		crdBody    = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"missings.kubediff.example.com"},"status":{"storedVersions":["v1"]}}`
		widgetPath = widgets + "/kd-missing"
		widgetBody = `{"apiVersion":"kubediff.example.com/v1","kind":"Widget","metadata":{"name":"kd-missing"},"status":{"replicas":1}}`
		scaleBody  = `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"kd-missing","namespace":"` + ns + `"},"spec":{"replicas":2}}`
		apply      = "?fieldManager=kubediff"
	)
	tests := []struct {
		name   string
		object string // must not exist afterwards
		r      request
	}{
		{"PUT namespace status", nsPath, request{method: "PUT", path: nsPath + "/status", contentType: jsonType, body: nsBody}},
		{"PUT namespace finalize", nsPath, request{method: "PUT", path: nsPath + "/finalize", contentType: jsonType, body: nsBody}},
		{"apply namespace status", nsPath, request{method: "PATCH", path: nsPath + "/status" + apply, contentType: applyType, body: nsBody}},
		{"merge-patch namespace status", nsPath, request{method: "PATCH", path: nsPath + "/status", contentType: mergeType, body: `{"status":{"phase":"Active"}}`}},
		{"PUT CRD status", crdPath, request{method: "PUT", path: crdPath + "/status", contentType: jsonType, body: crdBody}},
		{"apply CRD status", crdPath, request{method: "PATCH", path: crdPath + "/status" + apply, contentType: applyType, body: crdBody}},
		{"PUT custom resource status", widgetPath, request{method: "PUT", path: widgetPath + "/status", contentType: jsonType, body: widgetBody}},
		{"apply custom resource status", widgetPath, request{method: "PATCH", path: widgetPath + "/status" + apply, contentType: applyType, body: widgetBody}},
		{"merge-patch custom resource status", widgetPath, request{method: "PATCH", path: widgetPath + "/status", contentType: mergeType, body: `{"status":{"replicas":1}}`}},
		{"PUT scale", widgetPath, request{method: "PUT", path: widgetPath + "/scale", contentType: jsonType, body: scaleBody}},
		{"apply scale", widgetPath, request{method: "PATCH", path: widgetPath + "/scale" + apply, contentType: applyType, body: scaleBody}},
		{"merge-patch scale", widgetPath, request{method: "PATCH", path: widgetPath + "/scale", contentType: mergeType, body: `{"spec":{"replicas":2}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			compare(t, tt.r, send(tt.r, tt.r), allowance{})
			for _, s := range []*target{lapis, kube} {
				if resp := s.do(request{method: "GET", path: tt.object}); resp.code != http.StatusNotFound {
					t.Errorf("%s: after %s, GET %s answers %d %s", s.name, tt.r, tt.object, resp.code, resp.body)
				}
			}
		})
	}
}

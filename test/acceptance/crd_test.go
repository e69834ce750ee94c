package acceptance

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.acme.example.com
spec:
  group: acme.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              color: {type: string, default: blue}
`

// twoVersionCRD serves v1 (storage) and v2 with no conversion webhook.
const twoVersionCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.multi.example.com
spec:
  group: multi.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  conversion: {strategy: None}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v2
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

const clusterCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: regions.geo.example.com
spec:
  group: geo.example.com
  scope: Cluster
  names: {plural: regions, singular: region, kind: Region}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {zones: {type: integer, minimum: 1}}}
`

const doomedCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sprockets.doomed.example.com
spec:
  group: doomed.example.com
  scope: Namespaced
  names: {plural: sprockets, singular: sprocket, kind: Sprocket}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// applyCRD applies a CRD and waits until it is Established.
func (l *lapisProc) applyCRD(t testing.TB, manifest, name string) {
	t.Helper()
	wantEqual(t, "apply crd", l.mustIn(t, manifest, "apply", "-f", "-"), "customresourcedefinition.apiextensions.k8s.io/"+name+" created")
	// A CRD is created with conditions: null (as kube-apiserver's are), and kubectl 1.32's wait
	// fails at once on an object without conditions: wait until the controller has set some.
	poll.Eventually(t, 10*time.Second, "crd "+name+" has conditions", func() (bool, string) {
		out, _, _ := l.kubectl("get", "crd", name, "-o", "jsonpath={.status.conditions}")
		return out != "", out
	})
	wantEqual(t, "wait established", l.must(t, "wait", "--for", "condition=established", "--timeout=10s", "crd/"+name),
		"customresourcedefinition.apiextensions.k8s.io/"+name+" condition met")
}

func TestCRDs(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.must(t, "create", "ns", "crs")

	// The steps share the server and run one after another.
	inOrder(t, l, []step{
		{"namespaced CRD with a structural schema", crdNamespacedStructural},
		{"cluster-scoped CRD", crdClusterScoped},
		{"two versions without conversion", crdTwoVersions},
		{"deleting the CRD removes its resources and then the CRD", crdDeleteRemovesResources},
		{"terminating CRD refuses new resources", crdTerminatingRefusesNew},
	})
}

func crdNamespacedStructural(t *testing.T, l *lapisProc) {
	l.applyCRD(t, widgetCRD, "widgets.acme.example.com")
	wantEqual(t, "crd status", l.must(t, "get", "crd", "widgets.acme.example.com", "-o",
		`jsonpath={.status.acceptedNames.kind} {.status.acceptedNames.shortNames} {.status.conditions[?(@.type=="NamesAccepted")].status} {.status.storedVersions}`),
		`Widget ["wd"] True ["v1"]`)
	poll.Eventually(t, time.Second, "widgets in kubectl api-resources", func() (bool, string) {
		out, _, _ := l.kubectl("api-resources", "--api-group=acme.example.com", "--no-headers")
		return strings.Join(strings.Fields(out), " ") == "widgets wd acme.example.com/v1 true Widget", out
	})

	wantEqual(t, "create", l.mustIn(t, "apiVersion: acme.example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: crs}\nspec: {size: 3}\n",
		"apply", "-f", "-"), "widget.acme.example.com/w1 created")
	wantEqual(t, "defaulted", l.must(t, "get", "widget", "w1", "-n", "crs", "-o", "jsonpath={.spec} {.metadata.generation}"),
		`{"color":"blue","size":3} 1`)
	checkServerMeta(t, l.getObject(t, "get", "widgets.acme.example.com", "w1", "-n", "crs"))
	wantEqual(t, "update", l.mustIn(t, "apiVersion: acme.example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: crs}\nspec: {size: 4, color: red}\n",
		"apply", "-f", "-"), "widget.acme.example.com/w1 configured")
	wantEqual(t, "updated", l.must(t, "get", "widget", "w1", "-n", "crs", "-o", "jsonpath={.spec} {.metadata.generation}"),
		`{"color":"red","size":4} 2`)

	wantEqual(t, "string for integer", l.fails(t, "apiVersion: acme.example.com/v1\nkind: Widget\nmetadata: {name: bad, namespace: crs}\nspec: {size: big}\n", "apply", "-f", "-"),
		`The Widget "bad" is invalid: spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"`)

	unknown := "apiVersion: acme.example.com/v1\nkind: Widget\nmetadata: {name: extra, namespace: crs}\nspec: {size: 1, shape: round}\n"
	wantEqual(t, "unknown field, strict", l.fails(t, unknown, "create", "-f", "-", "--validate=strict"),
		`Error from server (BadRequest): error when creating "STDIN": Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.shape"`)
	out, errOut, err := l.kubectlIn(unknown, "create", "-f", "-", "--validate=warn")
	if err != nil {
		t.Fatalf("--validate=warn: %v %s", err, errOut)
	}
	wantEqual(t, "warn stdout", out, "widget.acme.example.com/extra created")
	wantEqual(t, "warn stderr", errOut, `Warning: unknown field "spec.shape"`)
	wantEqual(t, "pruned", l.must(t, "get", "widget", "extra", "-n", "crs", "-o", "jsonpath={.spec}"), `{"color":"blue","size":1}`)

	wantEqual(t, "short name", l.must(t, "get", "wd", "-n", "crs", "-o", "name"), "widget.acme.example.com/extra\nwidget.acme.example.com/w1")
	wantEqual(t, "category all", l.must(t, "get", "all", "-n", "crs", "-o", "name"), "widget.acme.example.com/extra\nwidget.acme.example.com/w1")
}

func crdClusterScoped(t *testing.T, l *lapisProc) {
	l.applyCRD(t, clusterCRD, "regions.geo.example.com")
	wantEqual(t, "create", l.mustIn(t, "apiVersion: geo.example.com/v1\nkind: Region\nmetadata: {name: eu}\nspec: {zones: 3}\n", "create", "-f", "-"),
		"region.geo.example.com/eu created")
	wantEqual(t, "get", l.must(t, "get", "regions", "eu", "-o", "jsonpath={.metadata.namespace}|{.spec.zones}"), "|3")
	wantEqual(t, "list", l.must(t, "get", "regions", "-o", "name"), "region.geo.example.com/eu")
	var raw object
	if err := json.Unmarshal([]byte(l.must(t, "get", "--raw", "/apis/geo.example.com/v1/regions/eu")), &raw); err != nil ||
		raw.Kind != "Region" || raw.Metadata.Name != "eu" || raw.Metadata.Namespace != "" {
		t.Errorf("GET /apis/geo.example.com/v1/regions/eu: %+v %v", raw, err)
	}
	wantEqual(t, "minimum", l.fails(t, "apiVersion: geo.example.com/v1\nkind: Region\nmetadata: {name: none}\nspec: {zones: 0}\n", "create", "-f", "-"),
		`The Region "none" is invalid: spec.zones: Invalid value: 0: spec.zones in body should be greater than or equal to 1`)
	wantEqual(t, "api-resources", strings.Join(strings.Fields(l.must(t, "api-resources", "--api-group=geo.example.com", "--no-headers")), " "),
		"regions geo.example.com/v1 false Region")
}

func crdTwoVersions(t *testing.T, l *lapisProc) {
	l.applyCRD(t, twoVersionCRD, "gadgets.multi.example.com")
	l.mustIn(t, "apiVersion: multi.example.com/v1\nkind: Gadget\nmetadata: {name: g1, namespace: crs}\nspec: {x: 1}\n", "create", "-f", "-")
	l.mustIn(t, "apiVersion: multi.example.com/v2\nkind: Gadget\nmetadata: {name: g2, namespace: crs}\nspec: {z: 2}\n", "create", "-f", "-")
	cases := []struct{ resource, name, want string }{
		{"gadgets.v2.multi.example.com", "g1", `multi.example.com/v2 {"x":1}`},
		{"gadgets.v1.multi.example.com", "g1", `multi.example.com/v1 {"x":1}`},
		{"gadgets.v1.multi.example.com", "g2", `multi.example.com/v1 {"z":2}`},
		{"gadgets", "g1", `multi.example.com/v2 {"x":1}`}, // v2 is the preferred version
	}
	for _, c := range cases {
		wantEqual(t, c.resource+" "+c.name, l.must(t, "get", c.resource, c.name, "-n", "crs", "-o", "jsonpath={.apiVersion} {.spec}"), c.want)
	}
	g1v1 := l.getObject(t, "get", "gadgets.v1.multi.example.com", "g1", "-n", "crs")
	g1v2 := l.getObject(t, "get", "gadgets.v2.multi.example.com", "g1", "-n", "crs")
	if g1v1.Metadata.UID != g1v2.Metadata.UID || g1v1.Metadata.ResourceVersion != g1v2.Metadata.ResourceVersion {
		t.Errorf("v1 and v2 views differ: uid %s/%s rv %s/%s", g1v1.Metadata.UID, g1v2.Metadata.UID, g1v1.Metadata.ResourceVersion, g1v2.Metadata.ResourceVersion)
	}
	var group struct {
		PreferredVersion struct{ Version string } `json:"preferredVersion"`
		Versions         []struct{ Version string }
	}
	if err := json.Unmarshal([]byte(l.must(t, "get", "--raw", "/apis/multi.example.com")), &group); err != nil ||
		group.PreferredVersion.Version != "v2" || len(group.Versions) != 2 || group.Versions[0].Version != "v2" || group.Versions[1].Version != "v1" {
		t.Errorf("discovery for multi.example.com: %+v %v", group, err)
	}
}

func crdDeleteRemovesResources(t *testing.T, l *lapisProc) {
	l.applyCRD(t, doomedCRD, "sprockets.doomed.example.com")
	l.must(t, "create", "ns", "crs2")
	for _, ns := range []string{"crs", "crs2"} {
		l.mustIn(t, "apiVersion: doomed.example.com/v1\nkind: Sprocket\nmetadata: {name: s1, namespace: "+ns+"}\n", "create", "-f", "-")
	}
	wantEqual(t, "delete", l.must(t, "delete", "crd", "sprockets.doomed.example.com", "--timeout=20s"),
		`customresourcedefinition.apiextensions.k8s.io "sprockets.doomed.example.com" deleted`)
	if out := l.must(t, "get", "crd", "-o", "name"); strings.Contains(out, "sprockets") {
		t.Errorf("kubectl get crd still lists it:\n%s", out)
	}
	out, errOut, err := l.kubectl("api-resources", "--api-group=doomed.example.com", "--no-headers")
	if err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("api-resources still lists the group: %q %q %v", out, errOut, err)
	}
	wantEqual(t, "group version gone", l.fails(t, "", "get", "--raw", "/apis/doomed.example.com/v1"),
		"Error from server (NotFound): the server could not find the requested resource")
	// The same CRD created again starts with no custom resources.
	l.applyCRD(t, doomedCRD, "sprockets.doomed.example.com")
	out, errOut, err = l.kubectl("get", "sprockets", "-A", "-o", "name")
	if err != nil || out != "" {
		t.Errorf("recreated CRD has old resources: %q %q %v", out, errOut, err)
	}
}

func crdTerminatingRefusesNew(t *testing.T, l *lapisProc) {
	const name = "sprockets.doomed.example.com"
	l.mustIn(t, "apiVersion: doomed.example.com/v1\nkind: Sprocket\nmetadata: {name: held, namespace: crs, finalizers: [example.com/hold]}\n", "create", "-f", "-")
	l.must(t, "delete", "crd", name, "--wait=false")
	poll.Eventually(t, 10*time.Second, "CRD marked for deletion", func() (bool, string) {
		out, _, _ := l.kubectl("get", "crd", name, "-o", "jsonpath={.metadata.deletionTimestamp}")
		return out != "", out
	})
	// kube refuses creates once the CRD's Terminating condition is set, a moment after the delete.
	const refused = `Error from server (MethodNotAllowed): error when creating "STDIN": create not allowed while custom resource definition is terminating`
	if ok, last := poll.Until(3*time.Second, func() (bool, string) {
		out, errOut, _ := l.kubectlIn("apiVersion: doomed.example.com/v1\nkind: Sprocket\nmetadata: {name: late, namespace: crs}\n", "create", "--dry-run=server", "-f", "-")
		return strings.TrimSpace(errOut) == refused, out + errOut
	}); !ok {
		t.Errorf("create while the CRD is terminating: got %q, want %q", last, refused)
	}
	if ok, last := poll.Until(3*time.Second, func() (bool, string) {
		out, _, _ := l.kubectl("get", "crd", name, "-o", `jsonpath={.status.conditions[?(@.type=="Terminating")]['status','reason','message']}`)
		return out == "True InstanceDeletionInProgress CustomResource deletion is in progress", out
	}); !ok {
		t.Errorf("CRD Terminating condition: got %q, want %q", last, "True InstanceDeletionInProgress CustomResource deletion is in progress")
	}
	l.must(t, "patch", "sprocket", "held", "-n", "crs", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	poll.Eventually(t, 20*time.Second, "CRD gone", func() (bool, string) {
		_, errOut, err := l.kubectl("get", "crd", name)
		return err != nil && strings.Contains(errOut, "NotFound"), errOut
	})
}

package acceptance

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
)

// The apply tests follow the Server-Side Apply document and the two client-side apply documents
// (declarative management with kubectl apply, and kustomize's merge rules) step by step, and check
// what a real cluster shows: managedFields, conflict messages as kubectl prints them, the
// last-applied-configuration annotation and the object's contents.

// webAppCRD stands in for a Deployment: spec.replicas (defaulted to 1, like a Deployment's) is
// exposed through a scale subresource, so `kubectl scale` can play the HorizontalPodAutoscaler.
const webAppCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: webapps.ssa.example.com
spec:
  group: ssa.example.com
  scope: Namespaced
  names: {plural: webapps, singular: webapp, kind: WebApp}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer, default: 1}
              image: {type: string}
          status:
            type: object
            properties:
              replicas: {type: integer}
`

// shelfCRD has one field per merge strategy marker of the Server-Side Apply document.
const shelfCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: shelves.lists.example.com
spec:
  group: lists.example.com
  scope: Namespaced
  names: {plural: shelves, singular: shelf, kind: Shelf}
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
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [port, protocol]
                items:
                  type: object
                  required: [port, protocol]
                  properties:
                    port: {type: integer}
                    protocol: {type: string}
                    name: {type: string}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              args:
                type: array
                x-kubernetes-list-type: atomic
                items: {type: string}
              steps:
                type: array
                items:
                  type: object
                  properties:
                    name: {type: string}
                    run: {type: string}
              selector:
                type: object
                x-kubernetes-map-type: atomic
                additionalProperties: {type: string}
              data:
                type: object
                additionalProperties: {type: string}
`

// looseCRD keeps whatever it is given: Server-Side Apply sees it as unstructured data.
const looseCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: bags.loose.example.com
spec:
  group: loose.example.com
  scope: Namespaced
  names: {plural: bags, singular: bag, kind: Bag}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// fooCRD is the topology-change example of the Server-Side Apply document; spec.data starts atomic.
const fooCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: foos.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: foos, singular: foo, kind: Foo}
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
              data:
                type: object
                x-kubernetes-map-type: atomic
                additionalProperties: {type: string}
`

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// conflictAdvice is what kubectl apply --server-side prints after the server's conflict message.
const conflictAdvice = `Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the ` + "`--force-conflicts`" + ` flag.
* If you do not intend to manage all of the fields, please edit your
  manifest to remove references to the fields that should keep their
  current managers.
* You may co-own fields by updating your manifest to match the existing
  value; in this case, you'll become the manager if the other manager(s)
  stop managing the field (remove it from their configuration).
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts`

// ssa runs `kubectl apply --server-side` on manifest as manager (kubectl's default when empty).
func (l *lapisProc) ssa(t testing.TB, manager, manifest string, flags ...string) string {
	t.Helper()
	args := []string{"apply", "--server-side", "-f", "-"}
	if manager != "" {
		args = append(args, "--field-manager="+manager)
	}
	return l.mustIn(t, manifest, append(args, flags...)...)
}

// ssaConflict runs `kubectl apply --server-side` as manager and wants it to fail with the
// server's conflict message msg followed by kubectl's advice.
func (l *lapisProc) ssaConflict(t testing.TB, manager, manifest, msg string) {
	t.Helper()
	args := []string{"apply", "--server-side", "-f", "-"}
	if manager != "" {
		args = append(args, "--field-manager="+manager)
	}
	wantEqual(t, "conflict for "+manager, l.fails(t, manifest, args...), "error: "+msg+"\n"+conflictAdvice)
}

// managedFields returns the object's metadata.managedFields as kubectl get --show-managed-fields
// prints them, one "manager operation [/subresource] apiVersion fieldsV1" line per entry, sorted
// (kube orders entries by operation and time, and times are second-granular).
func (l *lapisProc) managedFields(t testing.TB, object, namespace string) []string {
	t.Helper()
	out := l.must(t, "get", object, "-n", namespace, "-o", "json", "--show-managed-fields")
	var o struct {
		Metadata struct {
			ManagedFields []struct {
				Manager     string          `json:"manager"`
				Operation   string          `json:"operation"`
				APIVersion  string          `json:"apiVersion"`
				Time        string          `json:"time"`
				FieldsType  string          `json:"fieldsType"`
				FieldsV1    json.RawMessage `json:"fieldsV1"`
				Subresource string          `json:"subresource"`
			} `json:"managedFields"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	var lines []string
	for _, e := range o.Metadata.ManagedFields {
		var fields any
		if err := json.Unmarshal(e.FieldsV1, &fields); err != nil {
			t.Errorf("%s: managedFields entry of %s has fieldsV1 %s: %v", object, e.Manager, e.FieldsV1, err)
		}
		canonical, _ := json.Marshal(fields)
		if e.FieldsType != "FieldsV1" {
			t.Errorf("%s: managedFields entry of %s has fieldsType %q, want FieldsV1", object, e.Manager, e.FieldsType)
		}
		// kube leaves time out of an entry whose write changed no value (and of the scale
		// subresource's entries); where there is one, it is an RFC 3339 time.
		if _, err := time.Parse(time.RFC3339, e.Time); e.Time != "" && err != nil {
			t.Errorf("%s: managedFields entry of %s has time %q, want an RFC 3339 time", object, e.Manager, e.Time)
		}
		line := e.Manager + " " + e.Operation
		if e.Subresource != "" {
			line += " /" + e.Subresource
		}
		lines = append(lines, line+" "+e.APIVersion+" "+string(canonical))
	}
	sort.Strings(lines)
	return lines
}

// wantManaged compares the object's managedFields with want (in any order).
func (l *lapisProc) wantManaged(t testing.TB, object, namespace string, want ...string) {
	t.Helper()
	got := l.managedFields(t, object, namespace)
	want = append([]string(nil), want...)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("managedFields of %s:\n got: %s\nwant: %s", object, strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

// field runs kubectl get with a jsonpath template.
func (l *lapisProc) field(t testing.TB, object, namespace, jsonpath string) string {
	t.Helper()
	return l.must(t, "get", object, "-n", namespace, "-o", "jsonpath="+jsonpath)
}

func TestApply(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	for _, ns := range []string{"ssa-cm", "ssa-conflict", "ssa-scale", "ssa-clear", "ssa-lists", "ssa-misc",
		"csa", "csa-cr", "diff", "migrate", "managers", "prune", "applyset"} {
		l.must(t, "create", "ns", ns)
	}
	l.applyCRD(t, webAppCRD, "webapps.ssa.example.com")
	l.applyCRD(t, shelfCRD, "shelves.lists.example.com")
	l.applyCRD(t, looseCRD, "bags.loose.example.com")
	l.applyCRD(t, fooCRD, "foos.example.com")
	l.applyCRD(t, gaugeCRD, "gauges.csa.example.com")

	// Each step has its own namespace (made above), so the steps run side by side.
	inParallel(t, l, []step{
		{"the test-cm example", applyTestCMExample},
		{"conflicts and the three ways to resolve them", applyConflictResolutions},
		{"handing replicas over to an autoscaler", applyReplicasToAutoscaler},
		{"clearing managedFields", applyClearManagedFields},
		{"list and map markers of custom resources", applyListAndMapMarkers},
		{"topology change from atomic to granular", applyAtomicToGranular},
		{"dry run", applyDryRun},
		{"managers of kubectl's commands", applyKubectlManagers},
		{"client-side apply of a ConfigMap", clientSideApplyConfigMap},
		{"client-side apply merges lists with a merge strategy", clientSideApplyMergeStrategy},
		{"client-side apply of a Secret", clientSideApplySecret},
		{"client-side apply of a custom resource", clientSideApplyCustomResource},
		{"moving objects to kubectl apply", moveToKubectlApply},
		{"kubectl diff", kubectlDiffShowsChanges},
		{"pruning", applyPrune},
		{"pruning with an ApplySet", applyPruneApplySet},
		{"migrating from client-side to server-side apply and back", migrateClientSideServerSide},
	})
}

func applyTestCMExample(t *testing.T, l *lapisProc) {
	const ns = "ssa-cm"
	testCM := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: test-cm\n  namespace: ssa-cm\n  labels:\n    test-label: test\ndata:\n  key: some value\n"
	wantEqual(t, "apply", l.ssa(t, "", testCM), "configmap/test-cm serverside-applied")
	// The entry is timestamped with the apply.
	stamps := strings.Fields(l.field(t, "configmap/test-cm", ns, `{.metadata.creationTimestamp} {.metadata.managedFields[0].time}`))
	if len(stamps) != 2 {
		t.Errorf("creationTimestamp and managedFields time: %q", stamps)
	} else if created, err1 := time.Parse(time.RFC3339, stamps[0]); err1 != nil {
		t.Errorf("creationTimestamp %q: %v", stamps[0], err1)
	} else if applied, err2 := time.Parse(time.RFC3339, stamps[1]); err2 != nil || applied.Sub(created).Abs() > time.Second {
		t.Errorf("managedFields time %q, want the time of the apply (%s)", stamps[1], stamps[0])
	}
	cm := l.getObject(t, "get", "configmap/test-cm", "-n", ns)
	if cm.Data["key"] != "some value" || len(cm.Data) != 1 || cm.Metadata.Labels["test-label"] != "test" || len(cm.Metadata.Annotations) != 0 {
		t.Errorf("test-cm: data %q labels %q annotations %q", cm.Data, cm.Metadata.Labels, cm.Metadata.Annotations)
	}
	// Without --field-manager kubectl applies as "kubectl"; server-side apply writes no last-applied annotation.
	l.wantManaged(t, "configmap/test-cm", ns, `kubectl Apply v1 {"f:data":{"f:key":{}},"f:metadata":{"f:labels":{"f:test-label":{}}}}`)

	// Applying the same intent again changes nothing, not even the resourceVersion or managedFields times.
	time.Sleep(1100 * time.Millisecond) // managedFields times have a resolution of one second
	before := l.must(t, "get", "configmap/test-cm", "-n", ns, "-o", "json", "--show-managed-fields")
	wantEqual(t, "re-apply", l.ssa(t, "", testCM), "configmap/test-cm serverside-applied")
	wantEqual(t, "object after a no-op apply", l.must(t, "get", "configmap/test-cm", "-n", ns, "-o", "json", "--show-managed-fields"), before)

	// The serialization example: a body naming only apiVersion and kind is a no-change update.
	rv := cm.Metadata.ResourceVersion
	code, body := l.do(t, "PATCH", "/api/v1/namespaces/ssa-cm/configmaps/test-cm?fieldManager=noop", "application/apply-patch+yaml",
		"{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"ConfigMap\"\n}\n", true)
	var applied object
	if err := json.Unmarshal([]byte(body), &applied); code != 200 || err != nil || applied.Metadata.ResourceVersion != rv || applied.Data["key"] != "some value" {
		t.Errorf("apply of apiVersion and kind only: %d %s", code, body)
	}
	l.wantManaged(t, "configmap/test-cm", ns, `kubectl Apply v1 {"f:data":{"f:key":{}},"f:metadata":{"f:labels":{"f:test-label":{}}}}`)

	// An apply patch must name its field manager and must not carry managedFields.
	code, body = l.do(t, "PATCH", "/api/v1/namespaces/ssa-cm/configmaps/test-cm", "application/apply-patch+yaml",
		`{"apiVersion":"v1","kind":"ConfigMap","data":{"key":"x"}}`, true)
	if st := decodeStatus(t, body); code != 422 || st.Reason != "Invalid" ||
		st.Message != `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch` {
		t.Errorf("apply without fieldManager: %d %s", code, body)
	}
	wantEqual(t, "managedFields in an apply", l.fails(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: test-cm\n  namespace: ssa-cm\n"+
		"  managedFields:\n  - {manager: me, operation: Apply, apiVersion: v1, fieldsType: FieldsV1, fieldsV1: {}}\n", "apply", "--server-side", "-f", "-"),
		"Error from server (BadRequest): metadata.managedFields must be nil")

	// The second example: an update by kube-controller-manager changes data.key and takes it over, without conflict.
	wantEqual(t, "update", l.must(t, "patch", "configmap/test-cm", "-n", ns, "--field-manager=kube-controller-manager",
		"-p", `{"data":{"key":"new value"}}`), "configmap/test-cm patched")
	wantEqual(t, "data", l.field(t, "configmap/test-cm", ns, "{.data}"), `{"key":"new value"}`)
	l.wantManaged(t, "configmap/test-cm", ns,
		`kubectl Apply v1 {"f:metadata":{"f:labels":{"f:test-label":{}}}}`,
		`kube-controller-manager Update v1 {"f:data":{"f:key":{}}}`)
	// The same change attempted as an apply fails for the conflicting ownership.
	l.ssaConflict(t, "", testCM, `Apply failed with 1 conflict: conflict with "kube-controller-manager" using v1: .data.key`)
	wantEqual(t, "data after the conflict", l.field(t, "configmap/test-cm", ns, "{.data}"), `{"key":"new value"}`)
}

func applyConflictResolutions(t *testing.T, l *lapisProc) {
	const ns = "ssa-conflict"
	cm := func(name, data string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: ssa-conflict}\ndata: " + data + "\n"
	}
	for _, name := range []string{"force", "giveup", "coown", "multi"} {
		wantEqual(t, "create "+name, l.ssa(t, "manager-a", cm(name, "{color: red, size: small}")), "configmap/"+name+" serverside-applied")
		l.ssaConflict(t, "manager-b", cm(name, "{color: blue}"), `Apply failed with 1 conflict: conflict with "manager-a": .data.color`)
		wantEqual(t, name+" after the conflict", l.field(t, "configmap/"+name, ns, "{.data}"), `{"color":"red","size":"small"}`)
	}
	l.ssaConflict(t, "manager-b", cm("force", "{color: blue, size: big}"),
		"Apply failed with 2 conflicts: conflicts with \"manager-a\":\n- .data.color\n- .data.size")

	// Overwrite value, become sole manager.
	wantEqual(t, "force", l.ssa(t, "manager-b", cm("force", "{color: blue}"), "--force-conflicts"), "configmap/force serverside-applied")
	wantEqual(t, "forced data", l.field(t, "configmap/force", ns, "{.data}"), `{"color":"blue","size":"small"}`)
	l.wantManaged(t, "configmap/force", ns,
		`manager-a Apply v1 {"f:data":{"f:size":{}}}`,
		`manager-b Apply v1 {"f:data":{"f:color":{}}}`)
	// A field its only manager stops applying is removed from the object.
	l.ssa(t, "manager-a", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: force, namespace: ssa-conflict}\n")
	wantEqual(t, "data after manager-a gave size up", l.field(t, "configmap/force", ns, "{.data}"), `{"color":"blue"}`)
	l.wantManaged(t, "configmap/force", ns, `manager-b Apply v1 {"f:data":{"f:color":{}}}`)

	// Don't overwrite value, give up management claim.
	l.ssaConflict(t, "manager-b", cm("giveup", "{color: blue, shape: round}"), `Apply failed with 1 conflict: conflict with "manager-a": .data.color`)
	wantEqual(t, "give up", l.ssa(t, "manager-b", cm("giveup", "{shape: round}")), "configmap/giveup serverside-applied")
	wantEqual(t, "data", l.field(t, "configmap/giveup", ns, "{.data}"), `{"color":"red","shape":"round","size":"small"}`)
	l.wantManaged(t, "configmap/giveup", ns,
		`manager-a Apply v1 {"f:data":{"f:color":{},"f:size":{}}}`,
		`manager-b Apply v1 {"f:data":{"f:shape":{}}}`)

	// Don't overwrite value, become shared manager.
	wantEqual(t, "co-own", l.ssa(t, "manager-b", cm("coown", "{color: red}")), "configmap/coown serverside-applied")
	l.wantManaged(t, "configmap/coown", ns,
		`manager-a Apply v1 {"f:data":{"f:color":{},"f:size":{}}}`,
		`manager-b Apply v1 {"f:data":{"f:color":{}}}`)
	// Now either owner changing the shared field conflicts with the other.
	l.ssaConflict(t, "manager-a", cm("coown", "{color: green, size: small}"), `Apply failed with 1 conflict: conflict with "manager-b": .data.color`)
	// Transferring ownership: manager-a drops the field it shares, and manager-b is left its only owner.
	l.ssa(t, "manager-a", cm("coown", "{size: small}"))
	wantEqual(t, "data after the transfer", l.field(t, "configmap/coown", ns, "{.data}"), `{"color":"red","size":"small"}`)
	l.wantManaged(t, "configmap/coown", ns,
		`manager-a Apply v1 {"f:data":{"f:size":{}}}`,
		`manager-b Apply v1 {"f:data":{"f:color":{}}}`)
	l.ssa(t, "manager-b", cm("coown", "{color: green}"))
	wantEqual(t, "data after manager-b's change", l.field(t, "configmap/coown", ns, "{.data}"), `{"color":"green","size":"small"}`)

	// Conflicts with several managers are listed by manager; an updater is named with its apiVersion.
	l.must(t, "patch", "configmap/multi", "-n", ns, "-p", `{"data":{"size":"medium"}}`)
	l.ssaConflict(t, "manager-b", cm("multi", "{color: blue, size: big}"),
		"Apply failed with 2 conflicts: conflicts with \"kubectl-patch\" using v1:\n- .data.size\nconflicts with \"manager-a\":\n- .data.color")
}

func applyReplicasToAutoscaler(t *testing.T, l *lapisProc) {
	const ns = "ssa-scale"
	webapp := func(name, spec string) string {
		return "apiVersion: ssa.example.com/v1\nkind: WebApp\nmetadata:\n  name: " + name + "\n  namespace: ssa-scale\nspec:\n" + spec
	}
	full := webapp("nginx-deployment", "  replicas: 3\n  image: nginx:1.14.2\n")
	noReplicas := webapp("nginx-deployment", "  image: nginx:1.14.2\n")
	replicasOnly := webapp("nginx-deployment", "  replicas: 3\n")

	wantEqual(t, "apply", l.ssa(t, "", full), "webapp.ssa.example.com/nginx-deployment serverside-applied")
	l.wantManaged(t, "webapp/nginx-deployment", ns, `kubectl Apply ssa.example.com/v1 {"f:spec":{"f:image":{},"f:replicas":{}}}`)
	// The advanced way: a private manager takes a share of replicas first...
	wantEqual(t, "handover", l.ssa(t, "handover-to-hpa", replicasOnly, "--validate=false"), "webapp.ssa.example.com/nginx-deployment serverside-applied")
	l.wantManaged(t, "webapp/nginx-deployment", ns,
		`kubectl Apply ssa.example.com/v1 {"f:spec":{"f:image":{},"f:replicas":{}}}`,
		`handover-to-hpa Apply ssa.example.com/v1 {"f:spec":{"f:replicas":{}}}`)
	// ...so the user can drop replicas from the manifest without the value changing.
	l.ssa(t, "", noReplicas)
	wantEqual(t, "spec", l.field(t, "webapp/nginx-deployment", ns, "{.spec}"), `{"image":"nginx:1.14.2","replicas":3}`)
	l.wantManaged(t, "webapp/nginx-deployment", ns,
		`kubectl Apply ssa.example.com/v1 {"f:spec":{"f:image":{}}}`,
		`handover-to-hpa Apply ssa.example.com/v1 {"f:spec":{"f:replicas":{}}}`)
	// When the autoscaler sets replicas, the temporary manager owns nothing and is gone.
	wantEqual(t, "scale", l.must(t, "scale", "webapp/nginx-deployment", "-n", ns, "--replicas=5"), "webapp.ssa.example.com/nginx-deployment scaled")
	l.wantManaged(t, "webapp/nginx-deployment", ns,
		`kubectl Apply ssa.example.com/v1 {"f:spec":{"f:image":{}}}`,
		`kubectl Update /scale ssa.example.com/v1 {"f:spec":{"f:replicas":{}}}`)
	l.ssa(t, "", noReplicas)
	wantEqual(t, "spec after re-applying", l.field(t, "webapp/nginx-deployment", ns, "{.spec}"), `{"image":"nginx:1.14.2","replicas":5}`)

	// The basic way: keep replicas in the manifest; once the autoscaler writes it, applying conflicts...
	l.ssa(t, "", webapp("basic", "  replicas: 3\n  image: nginx:1.14.2\n"))
	l.must(t, "scale", "webapp/basic", "-n", ns, "--replicas=5")
	l.wantManaged(t, "webapp/basic", ns,
		`kubectl Apply ssa.example.com/v1 {"f:spec":{"f:image":{}}}`,
		`kubectl Update /scale ssa.example.com/v1 {"f:spec":{"f:replicas":{}}}`)
	l.ssaConflict(t, "", webapp("basic", "  replicas: 3\n  image: nginx:1.14.2\n"),
		`Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using ssa.example.com/v1: .spec.replicas`)
	// ...and then it is safe to remove it.
	l.ssa(t, "", webapp("basic", "  image: nginx:1.14.2\n"))
	wantEqual(t, "basic spec", l.field(t, "webapp/basic", ns, "{.spec}"), `{"image":"nginx:1.14.2","replicas":5}`)

	// The race: removing replicas while the user is its only manager resets it to its default.
	l.ssa(t, "", webapp("racy", "  replicas: 3\n  image: nginx:1.14.2\n"))
	l.ssa(t, "", webapp("racy", "  image: nginx:1.14.2\n"))
	wantEqual(t, "racy spec", l.field(t, "webapp/racy", ns, "{.spec}"), `{"image":"nginx:1.14.2","replicas":1}`)
	l.wantManaged(t, "webapp/racy", ns, `kubectl Apply ssa.example.com/v1 {"f:spec":{"f:image":{}}}`)
}

func applyClearManagedFields(t *testing.T, l *lapisProc) {
	const ns = "ssa-clear"
	reset := `[{"op":"replace","path":"/metadata/managedFields","value":[{}]}]`
	for _, name := range []string{"example-cm", "empty-list", "combined"} {
		l.ssa(t, "", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+name+", namespace: ssa-clear}\ndata: {a: \"1\"}\n")
		l.must(t, "patch", "configmap/"+name, "-n", ns, "-p", `{"data":{"b":"2"}}`)
		l.wantManaged(t, "configmap/"+name, ns, `kubectl Apply v1 {"f:data":{"f:a":{}}}`, `kubectl-patch Update v1 {"f:data":{"f:b":{}}}`)
	}

	// A list with one empty entry strips managedFields; the patch's own update is not recorded
	// either, since kube stops tracking updates once an object has no managedFields.
	wantEqual(t, "reset", l.must(t, "patch", "configmap/example-cm", "-n", ns, "--type=json", "-p", reset), "configmap/example-cm patched")
	l.wantManaged(t, "configmap/example-cm", ns)
	wantEqual(t, "data", l.field(t, "configmap/example-cm", ns, "{.data}"), `{"a":"1","b":"2"}`)
	l.must(t, "patch", "configmap/example-cm", "-n", ns, "-p", `{"data":{"c":"3"}}`)
	l.wantManaged(t, "configmap/example-cm", ns)
	// The next apply starts tracking again; what was there before is owned by before-first-apply.
	l.ssa(t, "", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: example-cm, namespace: ssa-clear}\ndata: {a: \"1\"}\n")
	l.wantManaged(t, "configmap/example-cm", ns,
		`kubectl Apply v1 {"f:data":{"f:a":{}}}`,
		`before-first-apply Update v1 {"f:data":{".":{},"f:a":{},"f:b":{},"f:c":{}}}`)
	l.ssaConflict(t, "", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: example-cm, namespace: ssa-clear}\ndata: {a: \"2\"}\n",
		`Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.a`)

	// kube-apiserver resets managedFields on an empty list as well (isResetManagedFields, since
	// kubernetes/kubernetes#91748 in 1.19), although the document says an empty list leaves them.
	wantEqual(t, "empty list", l.must(t, "patch", "configmap/empty-list", "-n", ns, "--type=json",
		"-p", `[{"op":"replace","path":"/metadata/managedFields","value":[]}]`), "configmap/empty-list patched")
	l.wantManaged(t, "configmap/empty-list", ns)

	// A reset combined with other changes: the changes are made and, as above, not tracked (kube's
	// skipNonAppliedManager; the document's "the applier takes ownership" does not happen).
	l.must(t, "patch", "configmap/combined", "-n", ns, "--type=json",
		"-p", `[{"op":"replace","path":"/metadata/managedFields","value":[{}]},{"op":"add","path":"/data/z","value":"26"}]`)
	wantEqual(t, "combined data", l.field(t, "configmap/combined", ns, "{.data}"), `{"a":"1","b":"2","z":"26"}`)
	l.wantManaged(t, "configmap/combined", ns)
}

func applyListAndMapMarkers(t *testing.T, l *lapisProc) {
	const ns = "ssa-lists"
	shelf := func(spec string) string {
		return "apiVersion: lists.example.com/v1\nkind: Shelf\nmetadata: {name: s, namespace: ssa-lists}\nspec: " + spec + "\n"
	}
	l.ssa(t, "manager-a", shelf(`{ports: [{port: 80, protocol: TCP, name: http}], tags: [a, b], args: [x1, x2], steps: [{name: one}], selector: {k1: v1}, data: {k1: v1}}`))
	// Map-list items, set members and granular map keys from two managers merge.
	wantEqual(t, "second manager", l.ssa(t, "manager-b", shelf(`{ports: [{port: 443, protocol: TCP, name: https}], tags: [c, a], data: {k2: v2}}`)),
		"shelf.lists.example.com/s serverside-applied")
	wantEqual(t, "merged spec", l.field(t, "shelf/s", ns, "{.spec}"),
		`{"args":["x1","x2"],"data":{"k1":"v1","k2":"v2"},"ports":[{"name":"http","port":80,"protocol":"TCP"},{"name":"https","port":443,"protocol":"TCP"}],"selector":{"k1":"v1"},"steps":[{"name":"one"}],"tags":["c","a","b"]}`)
	l.wantManaged(t, "shelf/s", ns,
		`manager-a Apply lists.example.com/v1 {"f:spec":{"f:args":{},"f:data":{"f:k1":{}},"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{}}},"f:selector":{},"f:steps":{},"f:tags":{"v:\"a\"":{},"v:\"b\"":{}}}}`,
		`manager-b Apply lists.example.com/v1 {"f:spec":{"f:data":{"f:k2":{}},"f:ports":{"k:{\"port\":443,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:protocol":{}}},"f:tags":{"v:\"a\"":{},"v:\"c\"":{}}}}`)

	// A field inside another manager's map-list item conflicts; atomic lists (declared so, or
	// unmarked ones, as all lists of a CRD without markers) and atomic maps conflict as a whole.
	l.ssaConflict(t, "manager-b", shelf(`{ports: [{port: 80, protocol: TCP, name: web}]}`),
		`Apply failed with 1 conflict: conflict with "manager-a": .spec.ports[port=80,protocol="TCP"].name`)
	l.ssaConflict(t, "manager-b", shelf(`{args: [z]}`), `Apply failed with 1 conflict: conflict with "manager-a": .spec.args`)
	l.ssaConflict(t, "manager-b", shelf(`{steps: [{name: two}]}`), `Apply failed with 1 conflict: conflict with "manager-a": .spec.steps`)
	l.ssaConflict(t, "manager-b", shelf(`{selector: {k2: v2}}`), `Apply failed with 1 conflict: conflict with "manager-a": .spec.selector`)
	l.ssaConflict(t, "manager-b", shelf(`{ports: [{port: 80, protocol: TCP, name: web}], args: [z], steps: [{name: two}], selector: {k2: v2}, data: {k1: v2}}`),
		"Apply failed with 5 conflicts: conflicts with \"manager-a\":\n- .spec.args\n- .spec.selector\n- .spec.steps\n- .spec.data.k1\n- .spec.ports[port=80,protocol=\"TCP\"].name")

	// manager-a drops its port and set members: what only it owned goes, what manager-b shares stays.
	l.ssa(t, "manager-a", shelf(`{tags: [b], args: [x1, x2], steps: [{name: one}], selector: {k1: v1}, data: {k1: v1}}`))
	wantEqual(t, "spec after manager-a's removal", l.field(t, "shelf/s", ns, "{.spec.ports} {.spec.tags}"),
		`[{"name":"https","port":443,"protocol":"TCP"}] ["c","a","b"]`)
	l.ssa(t, "manager-a", shelf(`{args: [x1, x2], steps: [{name: one}], selector: {k1: v1}, data: {k1: v1}}`))
	wantEqual(t, "tags after manager-a's removal", l.field(t, "shelf/s", ns, "{.spec.tags}"), `["c","a"]`)

	// A custom resource without a schema: keys are fields, lists are atomic.
	bag := func(spec string) string {
		return "apiVersion: loose.example.com/v1\nkind: Bag\nmetadata: {name: b, namespace: ssa-lists}\nspec: " + spec + "\n"
	}
	l.ssa(t, "manager-a", bag(`{items: [{name: one}], x: 1}`))
	l.ssaConflict(t, "manager-b", bag(`{items: [{name: two}]}`), `Apply failed with 1 conflict: conflict with "manager-a": .spec.items`)
	l.ssa(t, "manager-b", bag(`{w: 2}`))
	wantEqual(t, "bag spec", l.field(t, "bag/b", ns, "{.spec}"), `{"items":[{"name":"one"}],"w":2,"x":1}`)
	// (Unknown maps are both a field and a map of fields: each applier owns spec itself too.)
	l.wantManaged(t, "bag/b", ns,
		`manager-a Apply loose.example.com/v1 {"f:spec":{".":{},"f:items":{},"f:x":{}}}`,
		`manager-b Apply loose.example.com/v1 {"f:spec":{".":{},"f:w":{}}}`)
	wantEqual(t, "force", l.ssa(t, "manager-b", bag(`{items: [{name: two}], w: 2}`), "--force-conflicts"), "bag.loose.example.com/b serverside-applied")
	wantEqual(t, "bag spec after force", l.field(t, "bag/b", ns, "{.spec}"), `{"items":[{"name":"two"}],"w":2,"x":1}`)
	l.wantManaged(t, "bag/b", ns,
		`manager-a Apply loose.example.com/v1 {"f:spec":{".":{},"f:x":{}}}`,
		`manager-b Apply loose.example.com/v1 {"f:spec":{".":{},"f:items":{},"f:w":{}}}`)
}

func applyAtomicToGranular(t *testing.T, l *lapisProc) {
	const ns = "ssa-misc"
	foo := func(data string) string {
		return "apiVersion: example.com/v1\nkind: Foo\nmetadata: {name: foo-sample, namespace: ssa-misc}\nspec: {data: " + data + "}\n"
	}
	l.ssa(t, "manager-one", foo("{key1: val1, key2: val2}"))
	l.wantManaged(t, "foo/foo-sample", ns, `manager-one Apply example.com/v1 {"f:spec":{"f:data":{}}}`)
	l.ssaConflict(t, "manager-two", foo("{key1: changed}"), `Apply failed with 1 conflict: conflict with "manager-one": .spec.data`)
	l.mustIn(t, strings.Replace(fooCRD, "x-kubernetes-map-type: atomic", "x-kubernetes-map-type: granular", 1), "apply", "-f", "-")
	// manager-one keeps spec.data but no longer its keys, so another manager may change them.
	poll.Eventually(t, 10*time.Second, "apply after the CRD change", func() (bool, string) {
		out, errOut, err := l.kubectlIn(foo("{key1: changed}"), "apply", "--server-side", "--field-manager=manager-two", "-f", "-")
		return err == nil, out + errOut
	})
	wantEqual(t, "spec", l.field(t, "foo/foo-sample", ns, "{.spec}"), `{"data":{"key1":"changed","key2":"val2"}}`)
	l.wantManaged(t, "foo/foo-sample", ns,
		`manager-one Apply example.com/v1 {"f:spec":{"f:data":{}}}`,
		`manager-two Apply example.com/v1 {"f:spec":{"f:data":{"f:key1":{}}}}`)
}

func applyDryRun(t *testing.T, l *lapisProc) {
	const ns = "ssa-misc"
	m := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dry, namespace: ssa-misc}\ndata: {a: \"1\"}\n"
	wantEqual(t, "dry-run create", l.ssa(t, "", m, "--dry-run=server"), "configmap/dry serverside-applied (server dry run)")
	wantEqual(t, "nothing created", l.fails(t, "", "get", "configmap/dry", "-n", ns), `Error from server (NotFound): configmaps "dry" not found`)
	l.ssa(t, "", m)
	before := l.must(t, "get", "configmap/dry", "-n", ns, "-o", "json", "--show-managed-fields")
	changed := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dry, namespace: ssa-misc}\ndata: {b: \"2\"}\n"
	wantEqual(t, "dry-run apply", l.ssa(t, "other", changed, "--dry-run=server"), "configmap/dry serverside-applied (server dry run)")
	wantEqual(t, "dry-run client-side apply", l.mustIn(t, changed, "apply", "-f", "-", "--dry-run=server"), "configmap/dry configured (server dry run)")
	wantEqual(t, "object after dry runs", l.must(t, "get", "configmap/dry", "-n", ns, "-o", "json", "--show-managed-fields"), before)
}

func applyKubectlManagers(t *testing.T, l *lapisProc) {
	const ns = "managers"
	wantEqual(t, "create", l.must(t, "create", "configmap", "made", "-n", ns, "--from-literal=a=1", "--from-literal=b=2"), "configmap/made created")
	l.wantManaged(t, "configmap/made", ns, `kubectl-create Update v1 {"f:data":{".":{},"f:a":{},"f:b":{}}}`)
	l.mustIn(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: filed, namespace: managers, labels: {app: web}}\ndata: {k: v}\n", "create", "-f", "-")
	l.wantManaged(t, "configmap/filed", ns, `kubectl-create Update v1 {"f:data":{".":{},"f:k":{}},"f:metadata":{"f:labels":{".":{},"f:app":{}}}}`)

	current := l.must(t, "get", "configmap/made", "-n", ns, "-o", "yaml")
	wantEqual(t, "replace", l.mustIn(t, strings.Replace(current, `a: "1"`, `a: "9"`, 1), "replace", "-f", "-"), "configmap/made replaced")
	l.wantManaged(t, "configmap/made", ns,
		`kubectl-create Update v1 {"f:data":{".":{},"f:b":{}}}`,
		`kubectl-replace Update v1 {"f:data":{"f:a":{}}}`)
	wantEqual(t, "patch", l.must(t, "patch", "configmap/made", "-n", ns, "-p", `{"data":{"c":"3"}}`), "configmap/made patched")
	editor := writeFile(t, "editor.sh", "#!/bin/sh\nsed -i 's/b: \"2\"/b: \"7\"/' \"$1\"\n")
	if err := os.Chmod(editor, 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runCmd(append(l.env(), "KUBE_EDITOR="+editor), "", kubectlBin, "edit", "configmap/made", "-n", ns)
	if err != nil || strings.TrimSpace(out) != "configmap/made edited" {
		t.Errorf("kubectl edit: %v %q %q", err, out, errOut)
	}
	l.must(t, "label", "configmap/made", "-n", ns, "tier=front")
	l.must(t, "annotate", "configmap/made", "-n", ns, "note=hi")
	wantEqual(t, "data", l.field(t, "configmap/made", ns, "{.data}"), `{"a":"9","b":"7","c":"3"}`)
	l.wantManaged(t, "configmap/made", ns,
		`kubectl-create Update v1 {"f:data":{}}`,
		`kubectl-replace Update v1 {"f:data":{"f:a":{}}}`,
		`kubectl-patch Update v1 {"f:data":{"f:c":{}}}`,
		`kubectl-edit Update v1 {"f:data":{"f:b":{}}}`,
		`kubectl-label Update v1 {"f:metadata":{"f:labels":{".":{},"f:tier":{}}}}`,
		`kubectl-annotate Update v1 {"f:metadata":{"f:annotations":{".":{},"f:note":{}}}}`)
}

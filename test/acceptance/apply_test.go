package acceptance

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
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

// gaugeCRD is the custom resource the client-side apply tests merge: color has a default.
const gaugeCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gauges.csa.example.com
spec:
  group: csa.example.com
  scope: Namespaced
  names: {plural: gauges, singular: gauge, kind: Gauge}
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
              owner: {type: string}
              args: {type: array, items: {type: string}}
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

// lastAppliedOf returns the object's last-applied-configuration annotation, exactly.
func (l *lapisProc) lastAppliedOf(t testing.TB, object, namespace string) string {
	t.Helper()
	return l.getObject(t, "get", object, "-n", namespace).Metadata.Annotations[lastApplied]
}

var (
	diffHeader = regexp.MustCompile(`^diff -u -N \S+/LIVE-\d+/(\S+) \S+/MERGED-\d+/(\S+)$`)
	diffUID    = regexp.MustCompile(`uid: [0-9a-f-]{36}$`)
	diffTime   = regexp.MustCompile(`creationTimestamp: "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"$`)
)

// kubectlDiff runs kubectl diff on manifest and returns its exit code and the diff with the
// temporary directories, the file times, uids and creation times taken out.
func (l *lapisProc) kubectlDiff(t testing.TB, manifest string, flags ...string) (int, string) {
	t.Helper()
	out, errOut, err := l.kubectlIn(manifest, append([]string{"diff", "-f", "-"}, flags...)...)
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(interface{ ExitCode() int }); ok {
			code = ee.ExitCode()
		}
	}
	if errOut != "" {
		t.Errorf("kubectl diff wrote to stderr: %s", errOut)
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "diff "):
			m := diffHeader.FindStringSubmatch(line)
			if m == nil || m[1] != m[2] {
				t.Errorf("kubectl diff header %q", line)
				continue
			}
			line = "diff LIVE/" + m[1] + " MERGED/" + m[2]
		case strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "+++ "):
			continue
		}
		line = diffUID.ReplaceAllString(line, "uid: UID")
		line = diffTime.ReplaceAllString(line, `creationTimestamp: "TIME"`)
		lines = append(lines, line)
	}
	return code, strings.Join(lines, "\n")
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

	t.Run("the test-cm example", func(t *testing.T) {
		t.Parallel()
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
	})

	t.Run("conflicts and the three ways to resolve them", func(t *testing.T) {
		t.Parallel()
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
	})

	t.Run("handing replicas over to an autoscaler", func(t *testing.T) {
		t.Parallel()
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
	})

	t.Run("clearing managedFields", func(t *testing.T) {
		t.Parallel()
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
	})

	t.Run("list and map markers of custom resources", func(t *testing.T) {
		t.Parallel()
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
	})

	t.Run("topology change from atomic to granular", func(t *testing.T) {
		t.Parallel()
		const ns = "ssa-misc"
		foo := func(data string) string {
			return "apiVersion: example.com/v1\nkind: Foo\nmetadata: {name: foo-sample, namespace: ssa-misc}\nspec: {data: " + data + "}\n"
		}
		l.ssa(t, "manager-one", foo("{key1: val1, key2: val2}"))
		l.wantManaged(t, "foo/foo-sample", ns, `manager-one Apply example.com/v1 {"f:spec":{"f:data":{}}}`)
		l.ssaConflict(t, "manager-two", foo("{key1: changed}"), `Apply failed with 1 conflict: conflict with "manager-one": .spec.data`)
		l.mustIn(t, strings.Replace(fooCRD, "x-kubernetes-map-type: atomic", "x-kubernetes-map-type: granular", 1), "apply", "-f", "-")
		// manager-one keeps spec.data but no longer its keys, so another manager may change them.
		eventually(t, 10*time.Second, "apply after the CRD change", func() (bool, string) {
			out, errOut, err := l.kubectlIn(foo("{key1: changed}"), "apply", "--server-side", "--field-manager=manager-two", "-f", "-")
			return err == nil, out + errOut
		})
		wantEqual(t, "spec", l.field(t, "foo/foo-sample", ns, "{.spec}"), `{"data":{"key1":"changed","key2":"val2"}}`)
		l.wantManaged(t, "foo/foo-sample", ns,
			`manager-one Apply example.com/v1 {"f:spec":{"f:data":{}}}`,
			`manager-two Apply example.com/v1 {"f:spec":{"f:data":{"f:key1":{}}}}`)
	})

	t.Run("dry run", func(t *testing.T) {
		t.Parallel()
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
	})

	t.Run("managers of kubectl's commands", func(t *testing.T) {
		t.Parallel()
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
	})

	t.Run("client-side apply of a ConfigMap", func(t *testing.T) {
		t.Parallel()
		const ns = "csa"
		v1 := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: csa\n  labels:\n    app: web\ndata:\n  a: \"1\"\n  b: \"2\"\n"
		wantEqual(t, "create", l.mustIn(t, v1, "apply", "-f", "-"), "configmap/web created")
		wantEqual(t, "annotation", l.lastAppliedOf(t, "configmap/web", ns),
			`{"apiVersion":"v1","data":{"a":"1","b":"2"},"kind":"ConfigMap","metadata":{"annotations":{},"labels":{"app":"web"},"name":"web","namespace":"csa"}}`+"\n")
		l.wantManaged(t, "configmap/web", ns,
			`kubectl-client-side-apply Update v1 {"f:data":{".":{},"f:a":{},"f:b":{}},"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:labels":{".":{},"f:app":{}}}}`)
		wantEqual(t, "unchanged", l.mustIn(t, v1, "apply", "-f", "-"), "configmap/web unchanged")

		// A writer other than apply sets a field that was never in the file.
		l.must(t, "patch", "configmap/web", "-n", ns, "-p", `{"data":{"extra":"x"},"metadata":{"labels":{"team":"ops"}}}`)
		// The file changes a, drops b and the label app, adds c and the label tier.
		v2 := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: csa\n  labels:\n    tier: back\ndata:\n  a: \"10\"\n  c: \"3\"\n"
		wantEqual(t, "configure", l.mustIn(t, v2, "apply", "-f", "-"), "configmap/web configured")
		cm := l.getObject(t, "get", "configmap/web", "-n", ns)
		wantEqual(t, "data", l.field(t, "configmap/web", ns, "{.data} {.metadata.labels}"), `{"a":"10","c":"3","extra":"x"} {"team":"ops","tier":"back"}`)
		wantEqual(t, "annotation", cm.Metadata.Annotations[lastApplied],
			`{"apiVersion":"v1","data":{"a":"10","c":"3"},"kind":"ConfigMap","metadata":{"annotations":{},"labels":{"tier":"back"},"name":"web","namespace":"csa"}}`+"\n")
		l.wantManaged(t, "configmap/web", ns,
			`kubectl-client-side-apply Update v1 {"f:data":{".":{},"f:a":{},"f:c":{}},"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:labels":{".":{},"f:tier":{}}}}`,
			`kubectl-patch Update v1 {"f:data":{"f:extra":{}},"f:metadata":{"f:labels":{"f:team":{}}}}`)
		wantEqual(t, "unchanged", l.mustIn(t, v2, "apply", "-f", "-"), "configmap/web unchanged")

		// A field set to null in the file is cleared even though it never was in the annotation; a
		// whole map dropped from the file is cleared, with what other writers put in it.
		v3 := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: csa\ndata:\n  a: \"10\"\n  c: \"3\"\n  extra: null\n"
		wantEqual(t, "configure", l.mustIn(t, v3, "apply", "-f", "-"), "configmap/web configured")
		wantEqual(t, "data after null", l.field(t, "configmap/web", ns, "{.data} {.metadata.labels}"), `{"a":"10","c":"3"} `)
	})

	t.Run("client-side apply merges lists with a merge strategy", func(t *testing.T) {
		t.Parallel()
		const ns = "csa"
		// A list of primitives with patchStrategy merge (metadata.finalizers): last applied [a, b],
		// file [a, c], live [a, b, d] gives [a, c, d].
		fin := func(list string) string {
			return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fin, namespace: csa, finalizers: " + list + "}\n"
		}
		l.mustIn(t, fin("[example.com/a, example.com/b]"), "apply", "-f", "-")
		l.must(t, "patch", "configmap/fin", "-n", ns, "--type=json", "-p", `[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/d"}]`)
		wantEqual(t, "configure", l.mustIn(t, fin("[example.com/a, example.com/c]"), "apply", "-f", "-"), "configmap/fin configured")
		wantEqual(t, "finalizers", l.field(t, "configmap/fin", ns, "{.metadata.finalizers}"), `["example.com/a","example.com/c","example.com/d"]`)
		l.wantManaged(t, "configmap/fin", ns,
			`kubectl-client-side-apply Update v1 {"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:finalizers":{".":{},"v:\"example.com/a\"":{},"v:\"example.com/c\"":{}}}}`,
			`kubectl-patch Update v1 {"f:metadata":{"f:finalizers":{"v:\"example.com/d\"":{}}}}`)

		// A list of objects merged by its patch merge key (a ServiceAccount's secrets, by name): the
		// item dropped from the file goes, the new one is added, the one only in the live object stays.
		sa := func(list string) string {
			return "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: nginx, namespace: csa}\nsecrets: " + list + "\n"
		}
		l.mustIn(t, sa("[{name: nginx}, {name: helper-a}, {name: helper-b}]"), "apply", "-f", "-")
		l.must(t, "patch", "serviceaccount/nginx", "-n", ns, "--type=json", "-p", `[{"op":"add","path":"/secrets/-","value":{"name":"helper-d"}}]`)
		wantEqual(t, "configure", l.mustIn(t, sa("[{name: nginx}, {name: helper-b}, {name: helper-c}]"), "apply", "-f", "-"), "serviceaccount/nginx configured")
		wantEqual(t, "secrets", l.field(t, "serviceaccount/nginx", ns, "{.secrets}"),
			`[{"name":"nginx"},{"name":"helper-b"},{"name":"helper-d"},{"name":"helper-c"}]`)
		// (Object references are atomic structs: an item is owned whole.)
		l.wantManaged(t, "serviceaccount/nginx", ns,
			`kubectl-client-side-apply Update v1 {"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:secrets":{".":{},"k:{\"name\":\"helper-b\"}":{},"k:{\"name\":\"helper-c\"}":{},"k:{\"name\":\"nginx\"}":{}}}`,
			`kubectl-patch Update v1 {"f:secrets":{"k:{\"name\":\"helper-d\"}":{}}}`)
	})

	t.Run("client-side apply of a Secret", func(t *testing.T) {
		t.Parallel()
		const ns = "csa"
		secret := func(data string) string {
			return "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: csa}\ndata: " + data + "\n"
		}
		wantEqual(t, "create", l.mustIn(t, secret("{pass: c2VjcmV0, user: YWRtaW4=}"), "apply", "-f", "-"), "secret/creds created")
		l.must(t, "patch", "secret/creds", "-n", ns, "-p", `{"data":{"token":"dG9r"}}`)
		code, diff := l.kubectlDiff(t, secret("{pass: bmV3}"))
		if code != 1 {
			t.Errorf("kubectl diff exit code %d, want 1", code)
		}
		// kubectl diff masks secret data.
		wantEqual(t, "diff", diff, `diff LIVE/v1.Secret.csa.creds MERGED/v1.Secret.csa.creds
@@ -1,8 +1,7 @@
 apiVersion: v1
 data:
-  pass: '*** (before)'
+  pass: '*** (after)'
   token: '***'
-  user: '***'
 kind: Secret
 metadata:
   annotations:`)
		wantEqual(t, "configure", l.mustIn(t, secret("{pass: bmV3}"), "apply", "-f", "-"), "secret/creds configured")
		s := l.getObject(t, "get", "secret/creds", "-n", ns)
		wantEqual(t, "data", l.field(t, "secret/creds", ns, "{.data} {.type}"), `{"pass":"bmV3","token":"dG9r"} Opaque`)
		wantEqual(t, "annotation", s.Metadata.Annotations[lastApplied],
			`{"apiVersion":"v1","data":{"pass":"bmV3"},"kind":"Secret","metadata":{"annotations":{},"name":"creds","namespace":"csa"}}`+"\n")
	})

	t.Run("client-side apply of a custom resource", func(t *testing.T) {
		t.Parallel()
		const ns = "csa-cr"
		gauge := func(name, spec string) string {
			return "apiVersion: csa.example.com/v1\nkind: Gauge\nmetadata: {name: " + name + ", namespace: csa-cr}\nspec: " + spec + "\n"
		}
		wantEqual(t, "create", l.mustIn(t, gauge("g", "{size: 3, color: red, args: [a, b]}"), "apply", "-f", "-"), "gauge.csa.example.com/g created")
		l.must(t, "patch", "gauge/g", "-n", ns, "--type=merge", "-p", `{"spec":{"owner":"ops","args":["a","b","d"]}}`)
		code, diff := l.kubectlDiff(t, gauge("g", "{size: 4, args: [a, c]}"))
		if code != 1 {
			t.Errorf("kubectl diff exit code %d, want 1", code)
		}
		var changes []string
		for _, line := range strings.Split(diff, "\n") {
			if strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-") {
				changes = append(changes, line)
			}
		}
		wantEqual(t, "diff", strings.Join(changes, "\n"), "-  generation: 2\n+  generation: 3\n-  - b\n-  - d\n-  color: red\n+  - c\n+  color: blue\n-  size: 3\n+  size: 4")
		// The list is replaced, the removed color is defaulted again, owner (never in the file) stays.
		wantEqual(t, "configure", l.mustIn(t, gauge("g", "{size: 4, args: [a, c]}"), "apply", "-f", "-"), "gauge.csa.example.com/g configured")
		wantEqual(t, "spec", l.field(t, "gauge/g", ns, "{.spec}"), `{"args":["a","c"],"color":"blue","owner":"ops","size":4}`)
		wantEqual(t, "annotation", l.lastAppliedOf(t, "gauge/g", ns),
			`{"apiVersion":"csa.example.com/v1","kind":"Gauge","metadata":{"annotations":{},"name":"g","namespace":"csa-cr"},"spec":{"args":["a","c"],"size":4}}`+"\n")
		l.wantManaged(t, "gauge/g", ns,
			`kubectl-client-side-apply Update csa.example.com/v1 {"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:spec":{".":{},"f:args":{},"f:color":{},"f:size":{}}}`,
			`kubectl-patch Update csa.example.com/v1 {"f:spec":{"f:owner":{}}}`)
		// null clears a field set by another writer.
		l.mustIn(t, gauge("g", "{size: 4, args: [a, c], owner: null}"), "apply", "-f", "-")
		wantEqual(t, "spec after null", l.field(t, "gauge/g", ns, "{.spec}"), `{"args":["a","c"],"color":"blue","size":4}`)

		// Handing a field from the file to an imperative writer: drop it from the file and from the
		// annotation (kubectl apply set-last-applied), and apply no longer removes it.
		l.mustIn(t, gauge("h", "{size: 3, color: red}"), "apply", "-f", "-")
		file := writeFile(t, "h.yaml", gauge("h", "{color: red}"))
		wantEqual(t, "set-last-applied", l.must(t, "apply", "set-last-applied", "-f", file), "gauge.csa.example.com/h configured")
		wantEqual(t, "annotation", l.lastAppliedOf(t, "gauge/h", ns),
			`{"apiVersion":"csa.example.com/v1","kind":"Gauge","metadata":{"name":"h","namespace":"csa-cr"},"spec":{"color":"red"}}`+"\n")
		l.must(t, "apply", "-f", file)
		wantEqual(t, "spec", l.field(t, "gauge/h", ns, "{.spec}"), `{"color":"red","size":3}`)
	})

	t.Run("moving objects to kubectl apply", func(t *testing.T) {
		t.Parallel()
		const ns = "csa"
		// Applying to an object kubectl create made: kubectl warns and adds the annotation.
		l.must(t, "create", "configmap", "imp", "-n", ns, "--from-literal=a=1")
		m := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: imp, namespace: csa}\ndata: {a: \"2\"}\n"
		out, errOut, err := l.kubectlIn(m, "apply", "-f", "-")
		if err != nil {
			t.Fatalf("apply: %v %s", err, errOut)
		}
		wantEqual(t, "apply", out, "configmap/imp configured")
		wantEqual(t, "warning", errOut, "Warning: resource configmaps/imp is missing the kubectl.kubernetes.io/last-applied-configuration annotation which is required by kubectl apply. "+
			"kubectl apply should only be used on resources created declaratively by either kubectl create --save-config or kubectl apply. The missing annotation will be patched automatically.")
		wantEqual(t, "annotation", l.lastAppliedOf(t, "configmap/imp", ns),
			`{"apiVersion":"v1","data":{"a":"2"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"imp","namespace":"csa"}}`+"\n")

		// The documented migration: kubectl replace --save-config, then kubectl apply.
		l.must(t, "create", "configmap", "saved", "-n", ns, "--from-literal=a=1")
		exported := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: saved, namespace: csa}\ndata: {a: \"5\"}\n"
		wantEqual(t, "replace --save-config", l.mustIn(t, exported, "replace", "--save-config", "-f", "-"), "configmap/saved replaced")
		wantEqual(t, "annotation after replace --save-config", l.lastAppliedOf(t, "configmap/saved", ns),
			`{"apiVersion":"v1","data":{"a":"5"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"saved","namespace":"csa"}}`+"\n")
		out, errOut, err = l.kubectlIn(exported, "apply", "-f", "-")
		if err != nil || strings.TrimSpace(out) != "configmap/saved unchanged" || errOut != "" {
			t.Errorf("apply after replace --save-config: %v %q %q", err, out, errOut)
		}
	})

	t.Run("kubectl diff", func(t *testing.T) {
		t.Parallel()
		const ns = "diff"
		v1 := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: diff\n  labels:\n    app: web\ndata:\n  a: \"1\"\n  b: \"2\"\n"
		code, diff := l.kubectlDiff(t, v1)
		if code != 1 {
			t.Errorf("diff of a new object: exit code %d, want 1", code)
		}
		wantEqual(t, "diff of a new object", diff, `diff LIVE/v1.ConfigMap.diff.web MERGED/v1.ConfigMap.diff.web
@@ -0,0 +1,12 @@
+apiVersion: v1
+data:
+  a: "1"
+  b: "2"
+kind: ConfigMap
+metadata:
+  creationTimestamp: "TIME"
+  labels:
+    app: web
+  name: web
+  namespace: diff
+  uid: UID`)
		if out, _, err := l.kubectl("get", "configmap/web", "-n", ns); err == nil {
			t.Errorf("kubectl diff created the object: %s", out)
		}
		l.mustIn(t, v1, "apply", "-f", "-")
		if code, diff := l.kubectlDiff(t, v1); code != 0 || diff != "" {
			t.Errorf("diff of an applied file: exit code %d, diff %q; want 0 and nothing", code, diff)
		}
		// A field someone else set, not in the file, is not a difference.
		l.must(t, "patch", "configmap/web", "-n", ns, "-p", `{"data":{"extra":"x"}}`)
		if code, diff := l.kubectlDiff(t, v1); code != 0 || diff != "" {
			t.Errorf("diff after another writer: exit code %d, diff %q; want 0 and nothing", code, diff)
		}
		v2 := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: diff\n  labels:\n    app: web\ndata:\n  a: \"10\"\n  c: \"3\"\n"
		code, diff = l.kubectlDiff(t, v2)
		if code != 1 {
			t.Errorf("diff of a changed file: exit code %d, want 1", code)
		}
		wantEqual(t, "diff of a changed file", diff, `diff LIVE/v1.ConfigMap.diff.web MERGED/v1.ConfigMap.diff.web
@@ -1,7 +1,7 @@
 apiVersion: v1
 data:
-  a: "1"
-  b: "2"
+  a: "10"
+  c: "3"
   extra: x
 kind: ConfigMap
 metadata:`)
		// Neither diff nor a server-side dry run changes the object.
		before := l.must(t, "get", "configmap/web", "-n", ns, "-o", "json", "--show-managed-fields")
		wantEqual(t, "dry run", l.mustIn(t, v2, "apply", "-f", "-", "--dry-run=server"), "configmap/web configured (server dry run)")
		wantEqual(t, "object after diff and dry run", l.must(t, "get", "configmap/web", "-n", ns, "-o", "json", "--show-managed-fields"), before)
		l.mustIn(t, v2, "apply", "-f", "-")
		if code, diff := l.kubectlDiff(t, v2); code != 0 || diff != "" {
			t.Errorf("diff after applying: exit code %d, diff %q; want 0 and nothing", code, diff)
		}
		wantEqual(t, "data", l.field(t, "configmap/web", ns, "{.data}"), `{"a":"10","c":"3","extra":"x"}`)
	})

	t.Run("pruning", func(t *testing.T) {
		t.Parallel()
		const ns = "prune"
		dir := t.TempDir()
		for _, name := range []string{"one", "two"} {
			if err := os.WriteFile(filepath.Join(dir, name+".yaml"),
				[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+name+", namespace: prune, labels: {set: demo}}\ndata: {k: v}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		wantEqual(t, "apply directory", l.must(t, "apply", "-f", dir), "configmap/one created\nconfigmap/two created")
		// An object never applied is not pruned, even when it matches the selector.
		l.must(t, "create", "configmap", "other", "-n", ns)
		l.must(t, "label", "configmap/other", "-n", ns, "set=demo")
		if err := os.Remove(filepath.Join(dir, "two.yaml")); err != nil {
			t.Fatal(err)
		}
		wantEqual(t, "prune", l.must(t, "apply", "-f", dir, "--prune", "-l", "set=demo", "--prune-allowlist=core/v1/ConfigMap"),
			"configmap/one unchanged\nconfigmap/two pruned")
		wantEqual(t, "left", l.must(t, "get", "configmaps", "-n", ns, "-l", "set=demo", "-o", "name"), "configmap/one\nconfigmap/other")
		wantEqual(t, "delete -f", l.must(t, "delete", "-f", dir), `configmap "one" deleted`)
	})

	t.Run("pruning with an ApplySet", func(t *testing.T) {
		t.Parallel()
		const ns = "applyset"
		dir := t.TempDir()
		for _, name := range []string{"one", "two"} {
			if err := os.WriteFile(filepath.Join(dir, name+".yaml"),
				[]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+name+", namespace: applyset}\ndata: {k: v}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		env := append(l.env(), "KUBECTL_APPLYSET=true")
		applySet := func() string {
			t.Helper()
			out, errOut, err := runCmd(env, "", kubectlBin, "apply", "-n", ns, "-f", dir, "--prune", "--applyset=demo")
			if err != nil {
				t.Fatalf("apply --applyset: %v\n%s%s", err, out, errOut)
			}
			return out
		}
		wantEqual(t, "apply", applySet(), "configmap/one created\nconfigmap/two created")
		if err := os.Remove(filepath.Join(dir, "two.yaml")); err != nil {
			t.Fatal(err)
		}
		wantEqual(t, "prune", applySet(), "configmap/one unchanged\nconfigmap/two pruned")
		l.waitNamespaceDefaults(t, ns)
		wantEqual(t, "left", l.must(t, "get", "configmaps,secrets", "-n", ns, "-o", "name"), "configmap/kube-root-ca.crt\nconfigmap/one\nsecret/demo")
		sum := sha256.Sum256([]byte("demo.applyset.Secret."))
		id := "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
		parent := l.getObject(t, "get", "secret/demo", "-n", ns)
		if parent.Metadata.Labels["applyset.kubernetes.io/id"] != id || parent.Metadata.Annotations["applyset.kubernetes.io/contains-group-kinds"] != "ConfigMap" ||
			!strings.HasPrefix(parent.Metadata.Annotations["applyset.kubernetes.io/tooling"], "kubectl/") {
			t.Errorf("applyset parent: labels %q annotations %q, want id %s", parent.Metadata.Labels, parent.Metadata.Annotations, id)
		}
		wantEqual(t, "member label", l.field(t, "configmap/one", ns, "{.metadata.labels}"), `{"applyset.kubernetes.io/part-of":"`+id+`"}`)
	})

	t.Run("migrating from client-side to server-side apply and back", func(t *testing.T) {
		t.Parallel()
		const ns = "migrate"
		cm := func(name, data string) string {
			return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: migrate}\ndata: " + data + "\n"
		}
		wantEqual(t, "client-side create", l.mustIn(t, cm("mig", `{a: "1", b: "2"}`), "apply", "-f", "-"), "configmap/mig created")
		l.wantManaged(t, "configmap/mig", ns,
			`kubectl-client-side-apply Update v1 {"f:data":{".":{},"f:a":{},"f:b":{}},"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}`)
		// The same file applied server-side: no conflict, and the fields move to kubectl's Apply entry.
		out, errOut, err := l.kubectlIn(cm("mig", `{a: "1", b: "2"}`), "apply", "--server-side", "-f", "-")
		if err != nil || strings.TrimSpace(out) != "configmap/mig serverside-applied" || errOut != "" {
			t.Fatalf("server-side apply after client-side apply: %v %q %q", err, out, errOut)
		}
		l.wantManaged(t, "configmap/mig", ns,
			`kubectl Apply v1 {"f:data":{"f:a":{},"f:b":{}}}`,
			`kubectl-last-applied Apply v1 {"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}`)
		// The server keeps the annotation up to date on every kubectl server-side apply.
		wantEqual(t, "annotation", l.lastAppliedOf(t, "configmap/mig", ns),
			`{"apiVersion":"v1","data":{"a":"1","b":"2"},"kind":"ConfigMap","metadata":{"name":"mig","namespace":"migrate"}}`+"\n")
		l.ssa(t, "", cm("mig", `{a: "5", c: "3"}`))
		wantEqual(t, "data", l.field(t, "configmap/mig", ns, "{.data}"), `{"a":"5","c":"3"}`)
		wantEqual(t, "annotation", l.lastAppliedOf(t, "configmap/mig", ns),
			`{"apiVersion":"v1","data":{"a":"5","c":"3"},"kind":"ConfigMap","metadata":{"name":"mig","namespace":"migrate"}}`+"\n")
		// So client-side apply works again: c, last applied server-side, is removed.
		wantEqual(t, "client-side apply", l.mustIn(t, cm("mig", `{a: "6", d: "4"}`), "apply", "-f", "-"), "configmap/mig configured")
		wantEqual(t, "data", l.field(t, "configmap/mig", ns, "{.data}"), `{"a":"6","d":"4"}`)
		wantEqual(t, "annotation", l.lastAppliedOf(t, "configmap/mig", ns),
			`{"apiVersion":"v1","data":{"a":"6","d":"4"},"kind":"ConfigMap","metadata":{"annotations":{},"name":"mig","namespace":"migrate"}}`+"\n")
		l.wantManaged(t, "configmap/mig", ns,
			`kubectl-client-side-apply Update v1 {"f:data":{"f:a":{},"f:d":{}},"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}`)

		// kubectl's server-side apply may change what client-side apply last applied...
		l.mustIn(t, cm("upgrade", `{a: "1"}`), "apply", "-f", "-")
		wantEqual(t, "upgrade", l.ssa(t, "", cm("upgrade", `{a: "2"}`)), "configmap/upgrade serverside-applied")
		wantEqual(t, "data", l.field(t, "configmap/upgrade", ns, "{.data}"), `{"a":"2"}`)
		// ...another manager opts out of that and conflicts with kubectl-client-side-apply.
		l.mustIn(t, cm("optout", `{a: "1"}`), "apply", "-f", "-")
		l.ssaConflict(t, "my-manager", cm("optout", `{a: "2"}`), `Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.a`)
		// A field written by kubectl scale after client-side apply is not the applier's: it conflicts.
		webapp := "apiVersion: ssa.example.com/v1\nkind: WebApp\nmetadata: {name: legacy, namespace: migrate}\nspec: {replicas: 3, image: nginx}\n"
		l.mustIn(t, webapp, "apply", "-f", "-")
		l.must(t, "scale", "webapp/legacy", "-n", ns, "--replicas=5")
		l.ssaConflict(t, "", webapp, `Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using ssa.example.com/v1: .spec.replicas`)

		// The reverse: an object made with server-side apply has no annotation for client-side apply,
		// which warns, merges without deleting anything, and adds the annotation.
		l.ssa(t, "", cm("down", `{a: "1", b: "2"}`))
		if la := l.lastAppliedOf(t, "configmap/down", ns); la != "" {
			t.Errorf("server-side apply wrote the annotation %q", la)
		}
		out, errOut, err = l.kubectlIn(cm("down", `{a: "3"}`), "apply", "-f", "-")
		if err != nil {
			t.Fatalf("client-side apply: %v %s", err, errOut)
		}
		wantEqual(t, "client-side apply", out, "configmap/down configured")
		wantEqual(t, "warning", errOut, "Warning: resource configmaps/down is missing the kubectl.kubernetes.io/last-applied-configuration annotation which is required by kubectl apply. "+
			"kubectl apply should only be used on resources created declaratively by either kubectl create --save-config or kubectl apply. The missing annotation will be patched automatically.")
		wantEqual(t, "data", l.field(t, "configmap/down", ns, "{.data}"), `{"a":"3","b":"2"}`)
		l.wantManaged(t, "configmap/down", ns,
			`kubectl Apply v1 {"f:data":{"f:b":{}}}`,
			`kubectl-client-side-apply Update v1 {"f:data":{"f:a":{}},"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}`)
		out, errOut, err = l.kubectlIn(cm("down", `{e: "5"}`), "apply", "-f", "-")
		if err != nil || strings.TrimSpace(out) != "configmap/down configured" || errOut != "" {
			t.Errorf("second client-side apply: %v %q %q", err, out, errOut)
		}
		wantEqual(t, "data", l.field(t, "configmap/down", ns, "{.data}"), `{"b":"2","e":"5"}`)
		// And back to server-side apply, which takes over without conflicts.
		out, errOut, err = l.kubectlIn(cm("down", `{e: "6"}`), "apply", "--server-side", "-f", "-")
		if err != nil || strings.TrimSpace(out) != "configmap/down serverside-applied" || errOut != "" {
			t.Errorf("server-side apply after client-side apply: %v %q %q", err, out, errOut)
		}
		wantEqual(t, "data", l.field(t, "configmap/down", ns, "{.data}"), `{"e":"6"}`)
		l.wantManaged(t, "configmap/down", ns,
			`kubectl Apply v1 {"f:data":{"f:e":{}}}`,
			`kubectl-last-applied Apply v1 {"f:metadata":{"f:annotations":{"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}`)
	})
}

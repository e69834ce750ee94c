package acceptance

import (
	"crypto/sha256"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestApply's client-side steps: kubectl apply's three-way merge and its last-applied-configuration
// annotation, kubectl diff, pruning, and moving objects between client-side and server-side apply.

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

func clientSideApplyConfigMap(t *testing.T, l *lapisProc) {
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
}

func clientSideApplyMergeStrategy(t *testing.T, l *lapisProc) {
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
}

func clientSideApplySecret(t *testing.T, l *lapisProc) {
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
}

func clientSideApplyCustomResource(t *testing.T, l *lapisProc) {
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
}

func moveToKubectlApply(t *testing.T, l *lapisProc) {
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
}

func kubectlDiffShowsChanges(t *testing.T, l *lapisProc) {
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
}

func applyPrune(t *testing.T, l *lapisProc) {
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
}

func applyPruneApplySet(t *testing.T, l *lapisProc) {
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
}

func migrateClientSideServerSide(t *testing.T, l *lapisProc) {
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
}

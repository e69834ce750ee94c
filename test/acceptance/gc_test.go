package acceptance

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
)

// ownedBy renders an ownerReferences entry for a manifest.
func (l *lapisProc) ownedBy(t *testing.T, kind, apiVersion, name string, block bool, namespace ...string) string {
	t.Helper()
	args := []string{"get", kind, name, "-o", "jsonpath={.metadata.uid}"}
	if len(namespace) > 0 {
		args = append(args, "-n", namespace[0])
	}
	uid := l.must(t, args...)
	kindName := map[string]string{"configmap": "ConfigMap", "secret": "Secret", "widget": "Widget", "namespace": "Namespace"}[kind]
	return fmt.Sprintf("{apiVersion: %s, kind: %s, name: %s, uid: %s, blockOwnerDeletion: %v}", apiVersion, kindName, name, uid, block)
}

// gone waits until kubectl says the object does not exist.
func (l *lapisProc) gone(t *testing.T, args ...string) {
	t.Helper()
	poll.Eventually(t, 20*time.Second, strings.Join(args, " ")+" is deleted", func() (bool, string) {
		out, errOut, err := l.kubectl(append([]string{"get"}, args...)...)
		return err != nil && strings.Contains(errOut, "NotFound"), out + errOut
	})
}

// stays checks, after a moment, that the object still exists, and returns the jsonpath asked for.
func (l *lapisProc) stays(t *testing.T, jsonpath string, args ...string) string {
	t.Helper()
	time.Sleep(500 * time.Millisecond)
	return l.must(t, append(append([]string{"get"}, args...), "-o", "jsonpath="+jsonpath)...)
}

func TestGCCascade(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.must(t, "create", "ns", "gc")
	// The steps run one after another, all in namespace gc.
	inOrder(t, l, []step{
		{"background", gcBackground},
		{"orphan", gcOrphan},
		{"foreground", gcForeground},
		{"several owners", gcSeveralOwners},
		{"dangling owner", gcDanglingOwner},
		{"label selector", gcLabelSelector},
		{"custom resources", gcCustomResources},
		{"legacy orphanDependents", gcLegacyOrphanDependents},
	})
}

// gcConfigMap is a ConfigMap manifest in namespace gc with owners (ownerReferences entries)
// and extra metadata fields, ending in a document separator.
func gcConfigMap(name, owners string, extra ...string) string {
	meta := fmt.Sprintf("name: %s, namespace: gc", name)
	if owners != "" {
		meta += ", ownerReferences: [" + owners + "]"
	}
	for _, e := range extra {
		meta += ", " + e
	}
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {" + meta + "}\n---\n"
}

// gcSecret is a Secret manifest in namespace gc with owners, ending in a document separator.
func gcSecret(name, owners string) string {
	return "apiVersion: v1\nkind: Secret\nmetadata: {name: " + name + ", namespace: gc, ownerReferences: [" + owners + "]}\n---\n"
}

func gcBackground(t *testing.T, l *lapisProc) {
	l.must(t, "create", "configmap", "bg-owner", "-n", "gc")
	owner := l.ownedBy(t, "configmap", "v1", "bg-owner", false, "gc")
	l.mustIn(t, gcConfigMap("bg-dep", owner)+gcSecret("bg-secret", owner), "create", "-f", "-")
	wantEqual(t, "delete", l.must(t, "delete", "configmap", "bg-owner", "-n", "gc"), `configmap "bg-owner" deleted`)
	l.gone(t, "configmap", "bg-dep", "-n", "gc")
	l.gone(t, "secret", "bg-secret", "-n", "gc")

	l.must(t, "create", "configmap", "bg-owner2", "-n", "gc")
	owner = l.ownedBy(t, "configmap", "v1", "bg-owner2", true, "gc")
	l.mustIn(t, gcConfigMap("bg-dep2", owner), "create", "-f", "-")
	wantEqual(t, "delete", l.must(t, "delete", "configmap", "bg-owner2", "-n", "gc", "--cascade=background"), `configmap "bg-owner2" deleted`)
	l.gone(t, "configmap", "bg-dep2", "-n", "gc")
}

func gcOrphan(t *testing.T, l *lapisProc) {
	l.must(t, "create", "configmap", "or-owner", "-n", "gc")
	owner := l.ownedBy(t, "configmap", "v1", "or-owner", true, "gc")
	l.mustIn(t, gcConfigMap("or-dep", owner)+gcSecret("or-secret", owner), "create", "-f", "-")
	// kubectl waits until the owner is gone, which takes the collector's orphaning.
	wantEqual(t, "delete", l.must(t, "delete", "configmap", "or-owner", "-n", "gc", "--cascade=orphan"), `configmap "or-owner" deleted`)
	l.gone(t, "configmap", "or-owner", "-n", "gc")
	wantEqual(t, "orphaned configmap", l.stays(t, "{.metadata.name} refs={.metadata.ownerReferences}", "configmap", "or-dep", "-n", "gc"), "or-dep refs=")
	wantEqual(t, "orphaned secret", l.stays(t, "{.metadata.name} refs={.metadata.ownerReferences}", "secret", "or-secret", "-n", "gc"), "or-secret refs=")
}

func gcForeground(t *testing.T, l *lapisProc) {
	// kubectl waits for the owner, which waits for its blocking dependents.
	l.must(t, "create", "configmap", "fg-owner", "-n", "gc")
	owner := l.ownedBy(t, "configmap", "v1", "fg-owner", true, "gc")
	l.mustIn(t, gcConfigMap("fg-dep", owner)+gcSecret("fg-secret", owner), "create", "-f", "-")
	wantEqual(t, "delete", l.must(t, "delete", "configmap", "fg-owner", "-n", "gc", "--cascade=foreground"), `configmap "fg-owner" deleted`)
	for _, dep := range [][]string{{"configmap", "fg-dep"}, {"secret", "fg-secret"}} {
		if out, errOut, err := l.kubectl("get", dep[0], dep[1], "-n", "gc"); err == nil {
			t.Errorf("blocking dependent %s still there once the owner is gone: %s %s", dep[1], out, errOut)
		}
	}

	// A held blocking dependent keeps the owner, marked, until it goes.
	l.must(t, "create", "configmap", "held-owner", "-n", "gc")
	owner = l.ownedBy(t, "configmap", "v1", "held-owner", true, "gc")
	l.mustIn(t, gcConfigMap("held-dep", owner, "finalizers: [example.com/hold]"), "create", "-f", "-")
	wantEqual(t, "delete", l.must(t, "delete", "configmap", "held-owner", "-n", "gc", "--cascade=foreground", "--wait=false"), `configmap "held-owner" deleted`)
	poll.Eventually(t, 20*time.Second, "held dependent is being deleted", func() (bool, string) {
		out, _, _ := l.kubectl("get", "configmap", "held-dep", "-n", "gc", "-o", "jsonpath={.metadata.deletionTimestamp}")
		return out != "", out
	})
	got := l.stays(t, "{.metadata.finalizers} {.metadata.deletionTimestamp}", "configmap", "held-owner", "-n", "gc")
	if !strings.HasPrefix(got, `["foregroundDeletion"] 20`) {
		t.Errorf("owner while its blocking dependent is held: %q", got)
	}
	l.must(t, "patch", "configmap", "held-dep", "-n", "gc", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	l.gone(t, "configmap", "held-dep", "-n", "gc")
	l.gone(t, "configmap", "held-owner", "-n", "gc")

	// Without blockOwnerDeletion the dependent does not hold the owner.
	l.must(t, "create", "configmap", "loose-owner", "-n", "gc")
	owner = l.ownedBy(t, "configmap", "v1", "loose-owner", false, "gc")
	l.mustIn(t, gcConfigMap("loose-dep", owner, "finalizers: [example.com/hold]"), "create", "-f", "-")
	wantEqual(t, "delete", l.must(t, "delete", "configmap", "loose-owner", "-n", "gc", "--cascade=foreground", "--timeout=20s"), `configmap "loose-owner" deleted`)
	poll.Eventually(t, 20*time.Second, "loose dependent is being deleted", func() (bool, string) {
		out, _, _ := l.kubectl("get", "configmap", "loose-dep", "-n", "gc", "-o", "jsonpath={.metadata.deletionTimestamp}")
		return out != "", out
	})
	l.must(t, "patch", "configmap", "loose-dep", "-n", "gc", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	l.gone(t, "configmap", "loose-dep", "-n", "gc")
}

func gcSeveralOwners(t *testing.T, l *lapisProc) {
	l.must(t, "create", "configmap", "first", "-n", "gc")
	l.must(t, "create", "secret", "generic", "second", "-n", "gc")
	owners := l.ownedBy(t, "configmap", "v1", "first", true, "gc") + ", " + l.ownedBy(t, "secret", "v1", "second", false, "gc")
	l.mustIn(t, gcConfigMap("shared", owners), "create", "-f", "-")
	l.must(t, "delete", "configmap", "first", "-n", "gc")
	poll.Eventually(t, 20*time.Second, "reference to the deleted owner removed", func() (bool, string) {
		out, _, _ := l.kubectl("get", "configmap", "shared", "-n", "gc", "-o", "jsonpath={.metadata.ownerReferences[*].name}")
		return out == "second", out
	})
	l.must(t, "delete", "secret", "second", "-n", "gc")
	l.gone(t, "configmap", "shared", "-n", "gc")
}

func gcDanglingOwner(t *testing.T, l *lapisProc) {
	l.mustIn(t, gcConfigMap("orphan-at-birth", "{apiVersion: v1, kind: ConfigMap, name: nobody, uid: 3f0b8c52-0000-4000-8000-000000000000}"), "create", "-f", "-")
	l.gone(t, "configmap", "orphan-at-birth", "-n", "gc")
	// A cluster-scoped owner that exists keeps its namespaced dependent.
	l.mustIn(t, gcConfigMap("ns-owned", l.ownedBy(t, "namespace", "v1", "gc", false)), "create", "-f", "-")
	wantEqual(t, "namespace-owned configmap", l.stays(t, "{.metadata.name}", "configmap", "ns-owned", "-n", "gc"), "ns-owned")
}

func gcLabelSelector(t *testing.T, l *lapisProc) {
	for _, name := range []string{"sel-a", "sel-b"} {
		l.must(t, "create", "configmap", name, "-n", "gc")
		l.must(t, "label", "configmap", name, "-n", "gc", "role=owner")
		l.mustIn(t, gcSecret(name+"-dep", l.ownedBy(t, "configmap", "v1", name, true, "gc")), "create", "-f", "-")
	}
	out := l.must(t, "delete", "configmap", "-n", "gc", "-l", "role=owner", "--cascade=foreground")
	wantEqual(t, "delete", out, "configmap \"sel-a\" deleted\nconfigmap \"sel-b\" deleted")
	l.gone(t, "secret", "sel-a-dep", "-n", "gc")
	l.gone(t, "secret", "sel-b-dep", "-n", "gc")
}

func gcCustomResources(t *testing.T, l *lapisProc) {
	// The CRD appears after the collector started: its objects are followed too.
	l.applyCRD(t, widgetCRD, "widgets.acme.example.com")
	l.mustIn(t, "apiVersion: acme.example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: gc}\nspec: {size: 1}\n", "create", "-f", "-")
	l.mustIn(t, gcConfigMap("widget-dep", l.ownedBy(t, "widget", "acme.example.com/v1", "w1", true, "gc")), "create", "-f", "-")
	l.must(t, "create", "configmap", "cm-owner", "-n", "gc")
	l.mustIn(t, "apiVersion: acme.example.com/v1\nkind: Widget\nmetadata: {name: w2, namespace: gc, ownerReferences: ["+
		l.ownedBy(t, "configmap", "v1", "cm-owner", true, "gc")+"]}\nspec: {size: 2}\n", "create", "-f", "-")

	wantEqual(t, "delete widget", l.must(t, "delete", "widget", "w1", "-n", "gc", "--cascade=foreground"), `widget.acme.example.com "w1" deleted`)
	l.gone(t, "configmap", "widget-dep", "-n", "gc")
	l.must(t, "delete", "configmap", "cm-owner", "-n", "gc")
	l.gone(t, "widget", "w2", "-n", "gc")
}

func gcLegacyOrphanDependents(t *testing.T, l *lapisProc) {
	// orphanDependents=false asks for cascading deletion; while finalizers hold the object
	// kube-apiserver answers 202.
	l.mustIn(t, gcConfigMap("legacy", "", "finalizers: [example.com/hold]"), "create", "-f", "-")
	code, body := l.do(t, "DELETE", "/api/v1/namespaces/gc/configmaps/legacy", "application/json", `{"orphanDependents":false}`, true)
	if code != 202 || !strings.Contains(body, `"deletionTimestamp"`) {
		t.Errorf("DELETE with orphanDependents=false: %d %s", code, body)
	}
	code, body = l.do(t, "DELETE", "/api/v1/namespaces/gc/configmaps/legacy", "application/json", `{"orphanDependents":true}`, true)
	if code != 200 || !strings.Contains(body, `"finalizers":["example.com/hold","orphan"]`) {
		t.Errorf("DELETE with orphanDependents=true: %d %s", code, body)
	}
	code, body = l.do(t, "DELETE", "/api/v1/namespaces/gc/configmaps/legacy", "application/json", `{"orphanDependents":true,"propagationPolicy":"Foreground"}`, true)
	if code != 422 {
		t.Errorf("DELETE with both orphanDependents and propagationPolicy: %d %s", code, body)
	}
	l.must(t, "patch", "configmap", "legacy", "-n", "gc", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers/0"}]`)
	l.gone(t, "configmap", "legacy", "-n", "gc")
}

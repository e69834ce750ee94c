package acceptance

import (
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
)

// gizmoCRD is a small namespaced CRD the namespace tests put custom resources in.
const gizmoCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.ns.example.com
spec:
  group: ns.example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

func TestNamespaces(t *testing.T) {
	t.Parallel()
	l := startLapis(t)

	t.Run("built-in namespaces exist at start", func(t *testing.T) {
		wantEqual(t, "kubectl get ns -o name", l.must(t, "get", "ns", "-o", "name"),
			"namespace/default\nnamespace/kube-node-lease\nnamespace/kube-public\nnamespace/kube-system")
		for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
			wantEqual(t, ns+" phase", l.must(t, "get", "ns", ns, "-o", "jsonpath={.status.phase}"), "Active")
		}
	})

	t.Run("create get list", func(t *testing.T) {
		wantEqual(t, "create", l.must(t, "create", "namespace", "alpha"), "namespace/alpha created")
		wantEqual(t, "get", l.must(t, "get", "ns", "alpha", "-o",
			`jsonpath={.metadata.name} {.status.phase} {.spec.finalizers[*]} {.metadata.labels.kubernetes\.io/metadata\.name}`),
			"alpha Active kubernetes alpha")
		wantContains(t, "list", l.must(t, "get", "ns", "-o", "name"), "namespace/alpha\n")
		wantEqual(t, "list by label", l.must(t, "get", "ns", "-l", "kubernetes.io/metadata.name=alpha", "-o", "name"), "namespace/alpha")
		wantEqual(t, "create again", l.fails(t, "", "create", "namespace", "alpha"),
			`Error from server (AlreadyExists): namespaces "alpha" already exists`)
	})

	t.Run("default namespaces cannot be deleted", func(t *testing.T) {
		for _, ns := range []string{"default", "kube-system", "kube-public"} {
			wantEqual(t, "delete "+ns, l.fails(t, "", "delete", "ns", ns, "--wait=false"),
				`Error from server (Forbidden): namespaces "`+ns+`" is forbidden: this namespace may not be deleted`)
		}
	})

	t.Run("delete removes content then the namespace", func(t *testing.T) {
		l.applyCRD(t, gizmoCRD, "gizmos.ns.example.com")
		l.must(t, "create", "ns", "doomed")
		l.must(t, "create", "configmap", "cm1", "-n", "doomed", "--from-literal=a=b")
		l.must(t, "create", "secret", "generic", "s1", "-n", "doomed", "--from-literal=a=b")
		l.mustIn(t, "apiVersion: ns.example.com/v1\nkind: Gizmo\nmetadata: {name: g1, namespace: doomed}\nspec: {x: 1}\n", "create", "-f", "-")
		l.waitNamespaceDefaults(t, "doomed")
		wantEqual(t, "content", l.must(t, "get", "configmaps,secrets,gizmos", "-n", "doomed", "-o", "name"),
			"configmap/cm1\nconfigmap/kube-root-ca.crt\nsecret/s1\ngizmo.ns.example.com/g1")

		wantEqual(t, "delete", l.must(t, "delete", "ns", "doomed", "--wait=false"), `namespace "doomed" deleted`)
		poll.Eventually(t, 20*time.Second, "namespace doomed is gone", func() (bool, string) {
			_, errOut, err := l.kubectl("get", "ns", "doomed")
			return err != nil && strings.Contains(errOut, `namespaces "doomed" not found`), errOut
		})
		// A namespace of the same name starts empty (but for the kube-root-ca.crt published in
		// every namespace): the old content was deleted, not hidden.
		l.must(t, "create", "ns", "doomed")
		out, errOut, err := l.kubectl("get", "configmaps,secrets,gizmos", "-n", "doomed", "-o", "name", "--field-selector", "metadata.name!=kube-root-ca.crt")
		if err != nil || out != "" {
			t.Errorf("recreated namespace is not empty: %q %q %v", out, errOut, err)
		}
	})

	t.Run("terminating namespace refuses new content", func(t *testing.T) {
		l.must(t, "create", "ns", "held")
		l.must(t, "create", "configmap", "plain", "-n", "held")
		l.mustIn(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: blocker, namespace: held, finalizers: ["example.com/hold"]}
`, "create", "-f", "-")
		l.must(t, "delete", "ns", "held", "--wait=false")

		poll.Eventually(t, 10*time.Second, "only the finalized ConfigMap remains, marked for deletion", func() (bool, string) {
			out, errOut, _ := l.kubectl("get", "configmaps", "-n", "held", "-o",
				`jsonpath={range .items[*]}{.metadata.name} {.metadata.deletionTimestamp}{"\n"}{end}`)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			return len(lines) == 1 && strings.HasPrefix(lines[0], "blocker 20"), out + errOut
		})
		wantEqual(t, "phase", l.must(t, "get", "ns", "held", "-o", "jsonpath={.status.phase}"), "Terminating")
		if ts := l.must(t, "get", "ns", "held", "-o", "jsonpath={.metadata.deletionTimestamp}"); ts == "" {
			t.Errorf("terminating namespace has no deletionTimestamp")
		}
		wantEqual(t, "create in terminating namespace", l.fails(t, "", "create", "configmap", "late", "-n", "held"),
			`error: failed to create configmap: configmaps "late" is forbidden: unable to create new content in namespace held because it is being terminated`)

		l.must(t, "patch", "configmap", "blocker", "-n", "held", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
		poll.Eventually(t, 20*time.Second, "namespace held is gone", func() (bool, string) {
			_, errOut, err := l.kubectl("get", "ns", "held")
			return err != nil && strings.Contains(errOut, `namespaces "held" not found`), errOut
		})
	})

	// kube's namespace controller explains what keeps a namespace Terminating in its conditions
	// (after its 5 s grace period).
	t.Run("terminating namespace reports remaining finalizers", func(t *testing.T) {
		l.must(t, "create", "ns", "stuck")
		l.mustIn(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: blocker, namespace: stuck, finalizers: ["example.com/hold"]}
`, "create", "-f", "-")
		l.must(t, "delete", "ns", "stuck", "--wait=false")
		poll.Eventually(t, 20*time.Second, "NamespaceFinalizersRemaining condition", func() (bool, string) {
			out, _, _ := l.kubectl("get", "ns", "stuck", "-o",
				`jsonpath={.status.conditions[?(@.type=="NamespaceFinalizersRemaining")]['status','reason','message']}`)
			return out == "True SomeFinalizersRemain Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances", out
		})
		l.must(t, "patch", "configmap", "blocker", "-n", "stuck", "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	})
}

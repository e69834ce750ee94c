package acceptance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
)

// lapis's own controllers write built-in objects through kube's admission plugins too, with no
// request user: the garbage collector orphaning a Pod (PodSecurity reads the user) must neither
// fail nor stop lapis.
func TestControllersWriteThroughAdmission(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.must(t, "create", "configmap", "owner")
	l.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: orphan
  ownerReferences: [%s]
spec:
  containers: [{name: c, image: nginx}]
`, l.ownedBy(t, "configmap", "v1", "owner", false)), "apply", "-f", "-")
	l.must(t, "delete", "configmap", "owner", "--cascade=orphan")
	poll.Eventually(t, 20*time.Second, "the Pod is orphaned", func() (bool, string) {
		out, errOut, _ := l.kubectl("get", "pod", "orphan", "-o", "jsonpath={.metadata.ownerReferences}")
		return out == "" && errOut == "", out + errOut
	})
	if !l.running() {
		t.Fatalf("lapis stopped: %v", l.exitErr())
	}
	// And the Pod went through kube's admission when it was created.
	if sa := l.must(t, "get", "pod", "orphan", "-o", "jsonpath={.spec.serviceAccountName} {.spec.priority}"); strings.TrimSpace(sa) != "default 0" {
		t.Errorf("serviceAccountName and priority: %q", sa)
	}
}

// The objects kube-apiserver's post-start hooks create are there, with kube's field managers.
func TestBootstrapObjects(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	for _, c := range []struct{ object, manager string }{
		{"priorityclass/system-node-critical", "kube-apiserver"},
		{"priorityclass/system-cluster-critical", "kube-apiserver"},
		{"flowschema/exempt", "api-priority-and-fairness-config-producer-v1"},
		{"flowschema/catch-all", "api-priority-and-fairness-config-producer-v1"},
		{"prioritylevelconfiguration/workload-low", "api-priority-and-fairness-config-producer-v1"},
	} {
		poll.Eventually(t, 10*time.Second, c.object+" exists", func() (bool, string) {
			out, errOut, err := l.kubectl("get", c.object, "-o", "jsonpath={.metadata.managedFields[*].manager}")
			return err == nil && strings.Contains(out, c.manager), out + errOut
		})
	}
	// kube's config consumer keeps each FlowSchema's Dangling condition.
	poll.Eventually(t, 10*time.Second, "the exempt FlowSchema's Dangling condition", func() (bool, string) {
		out, _, _ := l.kubectl("get", "flowschema", "exempt", "-o", `jsonpath={.status.conditions[?(@.type=="Dangling")].status}`)
		return out == "False", out
	})
	l.mustIn(t, `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: lost}
spec:
  matchingPrecedence: 5000
  priorityLevelConfiguration: {name: nowhere}
`, "apply", "-f", "-")
	poll.Eventually(t, 10*time.Second, "a FlowSchema naming a missing priority level dangles", func() (bool, string) {
		out, _, _ := l.kubectl("get", "flowschema", "lost", "-o", `jsonpath={.status.conditions[?(@.type=="Dangling")].reason}`)
		return out == "NotFound", out
	})
}

// `kubectl api-resources -o wide` lists exactly what it lists against kube-apiserver 1.37
// (testdata: its output against ../shared/reference/kube-reference).
func TestAPIResourcesAsKube(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	want, err := os.ReadFile(filepath.Join("testdata", "kube-1.37-api-resources.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got := l.must(t, "api-resources", "-o", "wide")
	if strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
		t.Errorf("kubectl api-resources -o wide:\n%s\nkube 1.37's:\n%s", got, want)
	}
}

// Custom resources go through admission too: a ResourceQuota counting them refuses one too many
// with kube's message.
func TestCustomResourcesAdmitted(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.applyCRD(t, looseCRD, "bags.loose.example.com")
	l.must(t, "create", "namespace", "q")
	l.must(t, "-n", "q", "create", "quota", "bags", "--hard=count/bags.loose.example.com=1")
	poll.Eventually(t, 60*time.Second, "the quota counts bags", func() (bool, string) {
		out, _, _ := l.kubectl("-n", "q", "get", "quota", "bags", "-o", `jsonpath={.status.used.count/bags\.loose\.example\.com}`)
		return out == "0", out
	})
	bag := func(name string) string {
		return "apiVersion: loose.example.com/v1\nkind: Bag\nmetadata: {name: " + name + "}\n"
	}
	l.mustIn(t, bag("one"), "-n", "q", "create", "-f", "-")
	_, errOut, err := l.kubectlIn(bag("two"), "-n", "q", "create", "-f", "-")
	want := `bags.loose.example.com "two" is forbidden: exceeded quota: bags, requested: count/bags.loose.example.com=1, used: count/bags.loose.example.com=1, limited: count/bags.loose.example.com=1`
	if err == nil || !strings.Contains(errOut, want) {
		t.Errorf("second bag: %v %s\nwant %s", err, errOut, want)
	}
}

// A patch of a Scale that leaves values of the wrong type is the patch's fault, answered as
// kube answers it (its fields were handed to field management, which choked on them).
func TestScalePatchOfWrongTypes(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.must(t, "create", "deployment", "d1", "--image=nginx")
	a := l.request(t, "PATCH", "/apis/apps/v1/namespaces/default/deployments/d1/scale", `{"metadata":{"annotations":{"c0":{"a":"x"}}}}`,
		"Content-Type: application/merge-patch+json")
	if a.code != 422 || !strings.Contains(a.body, `json: cannot unmarshal object into Go struct field ObjectMeta.metadata.annotations of type string`) ||
		!strings.Contains(a.body, `"field":"patch"`) {
		t.Errorf("merge patch of a Scale's annotations with a map: %d %s", a.code, a.body)
	}
}

// kube-apiserver answers a write of a Scale without managedFields, for built-in and custom
// resources alike (asked of kube 1.37: apiextensions' scale endpoint does not add them).
func TestScaleAnswersWithoutManagedFields(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.applyCRD(t, webAppCRD, "webapps.ssa.example.com")
	l.mustIn(t, "apiVersion: ssa.example.com/v1\nkind: WebApp\nmetadata: {name: w}\nspec: {replicas: 1}\n", "apply", "-f", "-")
	l.must(t, "create", "deployment", "d", "--image=nginx")
	for _, path := range []string{"/apis/ssa.example.com/v1/namespaces/default/webapps/w/scale", "/apis/apps/v1/namespaces/default/deployments/d/scale"} {
		a := l.request(t, "PATCH", path+"?fieldManager=m", `{"spec":{"replicas":3}}`, "Content-Type: application/merge-patch+json")
		if a.code != 200 || strings.Contains(a.body, "managedFields") || !strings.Contains(a.body, `"replicas":3`) {
			t.Errorf("%s: %d %s", path, a.code, a.body)
		}
	}
}

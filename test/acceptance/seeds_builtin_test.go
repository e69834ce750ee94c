package acceptance

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The seed walkthroughs: the built-in types of the three documents that use them, step by step
// with the real kubectl — the Deployment tutorial of the declarative-management document (000),
// the Server-Side Apply document's handover of a Deployment's replicas to an HPA (002) and the
// Pod examples of the API-concepts document (003). Where a document and kube-apiserver 1.37
// disagree, the expectation is kube's (each such place says so).
//
// lapis runs no workload controllers (no ReplicaSets, no Deployment status, no HPA controller),
// so neither do these tests: where the document has a controller act, the test sends the
// controller's own request. To check the expectations against kube, run them against a fresh
// kube-apiserver 1.37 whose controller manager runs only what lapis does:
//
//	KCM_CONTROLLERS=serviceaccount-controller,serviceaccount-token-controller,root-ca-certificate-publisher-controller,namespace-controller,garbage-collector-controller,resourcequota-controller,service-cidr-controller \
//	  ../shared/reference/kube-reference start /tmp/seeds-ref
//	LAPIS_SEEDS_KUBECONFIG=/tmp/seeds-ref/kubeconfig go test ./test/acceptance/ -run TestSeed -count=1
//
// (the tests create namespaces and objects in default, so each run needs a fresh server).

// seedServer starts lapis, or returns the cluster of $LAPIS_SEEDS_KUBECONFIG when that is set.
func seedServer(t *testing.T) *lapisProc {
	t.Helper()
	kubeconfig := os.Getenv("LAPIS_SEEDS_KUBECONFIG")
	if kubeconfig == "" {
		return startLapis(t)
	}
	if skipMessage != "" {
		t.Skip(skipMessage)
	}
	return &lapisProc{kubeconfig: kubeconfig, cacheDir: t.TempDir()}
}

// httpClient is an HTTP client with the kubeconfig's credentials (lapis's token, or a client
// certificate) and the server's address.
func (l *lapisProc) httpClient(t testing.TB) (*http.Client, string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", l.kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", l.kubeconfig, err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client, strings.TrimSuffix(cfg.Host, "/")
}

// send makes one request with headers given as "Name: value" and reads the answer whole.
func (l *lapisProc) send(t testing.TB, method, path, body string, headers ...string) answer {
	t.Helper()
	client, server := l.httpClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, server+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return exchange(t, client, req, body, headers)
}

// sendOK is send, failing the test unless the answer has the status code want.
func (l *lapisProc) sendOK(t testing.TB, want int, method, path, body string, headers ...string) answer {
	t.Helper()
	a := l.send(t, method, path, body, headers...)
	if a.code != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, a.code, a.body, want)
	}
	return a
}

// watchEvent is one event of a JSON watch stream.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// meta is the part of an object's metadata the watch and list checks read.
type meta struct {
	Name                       string            `json:"name"`
	ResourceVersion            string            `json:"resourceVersion"`
	DeletionTimestamp          string            `json:"deletionTimestamp"`
	DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds"`
	Finalizers                 []string          `json:"finalizers"`
	Labels                     map[string]string `json:"labels"`
}

func (e watchEvent) meta(t testing.TB) meta {
	t.Helper()
	var o struct {
		Metadata meta `json:"metadata"`
	}
	if err := json.Unmarshal(e.Object, &o); err != nil {
		t.Fatalf("watch event object %s: %v", e.Object, err)
	}
	return o.Metadata
}

// watch opens a JSON watch on path; events arrive on the channel until the test ends.
func (l *lapisProc) watch(t testing.TB, path string) (http.Header, <-chan watchEvent) {
	t.Helper()
	client, server := l.httpClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", server+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("watch %s: %v", path, err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("watch %s: %d %s", path, resp.StatusCode, b)
	}
	events := make(chan watchEvent, 100)
	go func() {
		defer close(events)
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		for {
			var e watchEvent
			if dec.Decode(&e) != nil {
				return
			}
			events <- e
		}
	}()
	return resp.Header, events
}

// nextEvents reads n events, failing the test if they do not come within 10 s.
func nextEvents(t testing.TB, events <-chan watchEvent, n int) []watchEvent {
	t.Helper()
	var got []watchEvent
	timeout := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("watch ended after %d of %d events", len(got), n)
			}
			got = append(got, e)
		case <-timeout:
			var seen []string
			for _, e := range got {
				seen = append(seen, eventLine(t, e))
			}
			t.Fatalf("%d of %d watch events after 10s: %q", len(got), n, seen)
		}
	}
	return got
}

// noEvent fails the test if an event arrives within d.
func noEvent(t testing.TB, events <-chan watchEvent, d time.Duration) {
	t.Helper()
	select {
	case e, ok := <-events:
		if ok {
			t.Errorf("unexpected watch event %s %s", e.Type, e.Object)
		}
	case <-time.After(d):
	}
}

var (
	maskUID    = regexp.MustCompile(`(?m)^(\s*uid: )[0-9a-f-]{36}$`)
	maskTime   = regexp.MustCompile(`(?m)^(\s*(?:creationTimestamp|deletionTimestamp|time): )"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"$`)
	maskRV     = regexp.MustCompile(`(?m)^(\s*resourceVersion: )"\d+"$`)
	maskAccess = regexp.MustCompile(`kube-api-access-[a-z0-9]{5}`)
)

// masked replaces in YAML what differs from run to run: uids, times, resource versions and the
// random suffix of a Pod's token volume.
func masked(yaml string) string {
	yaml = maskUID.ReplaceAllString(yaml, "${1}UID")
	yaml = maskTime.ReplaceAllString(yaml, `${1}"TIME"`)
	yaml = maskRV.ReplaceAllString(yaml, `${1}"RV"`)
	return maskAccess.ReplaceAllString(yaml, "kube-api-access-XXXXX")
}

// seedDiff is kubectlDiff of the file, with resource versions masked too.
func (l *lapisProc) seedDiff(t testing.TB, file, namespace string) (int, string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	code, diff := l.kubectlDiff(t, string(b), "-n", namespace)
	return code, maskRV.ReplaceAllString(diff, `${1}"RV"`)
}

// simpleDeployment is application/simple_deployment.yaml, as the declarative-management document shows it.
const simpleDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
spec:
  selector:
    matchLabels:
      app: nginx
  minReadySeconds: 5
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
        ports:
        - containerPort: 80
`

// updateDeployment is application/update_deployment.yaml: image 1.16.1, minReadySeconds removed.
const updateDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
spec:
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.16.1 # update the image
        ports:
        - containerPort: 80
`

// deploymentDefaults is the spec of simple_deployment.yaml as kube-apiserver 1.37 defaults it
// (the document's list, plus the defaults added since: progressDeadlineSeconds,
// revisionHistoryLimit, terminationMessagePolicy, schedulerName; maxSurge and maxUnavailable
// are 25%, and the template has no creationTimestamp: null any more).
const deploymentDefaults = `spec:
  minReadySeconds: 5
  progressDeadlineSeconds: 600
  replicas: 1
  revisionHistoryLimit: 10
  selector:
    matchLabels:
      app: nginx
  strategy:
    rollingUpdate:
      maxSurge: 25%
      maxUnavailable: 25%
    type: RollingUpdate
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - image: nginx:1.14.2
        imagePullPolicy: IfNotPresent
        name: nginx
        ports:
        - containerPort: 80
          protocol: TCP
        resources: {}
        terminationMessagePath: /dev/termination-log
        terminationMessagePolicy: File
      dnsPolicy: ClusterFirst
      restartPolicy: Always
      schedulerName: default-scheduler
      securityContext: {}
      terminationGracePeriodSeconds: 30
status: {}
`

// writeIn writes content to dir/name.
func writeIn(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSeedDeclarativeDeployment walks the declarative-management document's Deployment tutorial.
func TestSeedDeclarativeDeployment(t *testing.T) {
	t.Parallel()
	l := seedServer(t)
	for _, ns := range []string{"merge", "recreate", "prune", "applyset"} {
		l.must(t, "create", "ns", ns)
	}

	// Each step has its own namespace, so the steps run side by side.
	inParallel(t, l, []step{
		{"create; diff; scale; update; delete", seedDeploymentLifecycle},
		{"merging containers and args", seedDeploymentMergeContainersAndArgs},
		{"the Recreate strategy and defaulted rollingUpdate", seedDeploymentRecreateStrategy},
		{"pruning with the default allowlist", seedDeploymentPruneDefaultAllowlist},
		{"pruning with an ApplySet", seedDeploymentPruneApplySet},
	})
}

func seedDeploymentLifecycle(t *testing.T, l *lapisProc) {
	// The document works in the default namespace; its annotation shows "namespace":"default".
	const ns = "default"
	dir := t.TempDir()
	simple := writeIn(t, dir, "simple_deployment.yaml", simpleDeployment)
	update := writeIn(t, dir, "update_deployment.yaml", updateDeployment)

	// kubectl diff prints the object that will be created (a server-side dry run).
	code, diff := l.seedDiff(t, simple, ns)
	if code != 1 {
		t.Errorf("kubectl diff of a new Deployment: exit code %d, want 1", code)
	}
	wantEqual(t, "diff of the new Deployment", diff, `diff LIVE/apps.v1.Deployment.default.nginx-deployment MERGED/apps.v1.Deployment.default.nginx-deployment
@@ -0,0 +1,42 @@
+apiVersion: apps/v1
+kind: Deployment
+metadata:
+  creationTimestamp: "TIME"
+  generation: 1
+  name: nginx-deployment
+  namespace: default
+  uid: UID
`+prefixLines("+", deploymentDefaults))
	wantEqual(t, "nothing created by diff", l.fails(t, "", "get", "deployment/nginx-deployment"),
		`Error from server (NotFound): deployments.apps "nginx-deployment" not found`)

	wantEqual(t, "apply", l.must(t, "apply", "-f", simple), "deployment.apps/nginx-deployment created")
	const annotation1 = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"nginx-deployment","namespace":"default"},"spec":{"minReadySeconds":5,"selector":{"matchLabels":{"app":"nginx"}},"template":{"metadata":{"labels":{"app":"nginx"}},"spec":{"containers":[{"image":"nginx:1.14.2","name":"nginx","ports":[{"containerPort":80}]}]}}}}`
	// The live configuration: the annotation matches the file, and the server's defaults are set.
	wantEqual(t, "get -o yaml", masked(l.must(t, "get", "-f", simple, "-o", "yaml")), `apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      `+annotation1+`
  creationTimestamp: "TIME"
  generation: 1
  name: nginx-deployment
  namespace: default
  resourceVersion: "RV"
  uid: UID
`+deploymentDefaults)
	if code, diff := l.seedDiff(t, simple, ns); code != 0 || diff != "" {
		t.Errorf("diff after apply: exit code %d, diff %q; want 0 and nothing", code, diff)
	}
	wantEqual(t, "get", columns(l.must(t, "get", "deployment", "nginx-deployment")),
		"NAME READY UP-TO-DATE AVAILABLE AGE\nnginx-deployment 0/1 0 0 AGE")

	// kubectl scale writes replicas directly; the annotation does not change.
	wantEqual(t, "scale", l.must(t, "scale", "deployment/nginx-deployment", "--replicas=2"), "deployment.apps/nginx-deployment scaled")
	wantEqual(t, "after scale", l.field(t, "deployment/nginx-deployment", ns, "{.spec.replicas} {.metadata.generation}"), "2 2")
	wantEqual(t, "annotation after scale", l.lastAppliedOf(t, "deployment/nginx-deployment", ns), annotation1+"\n")

	code, diff = l.seedDiff(t, update, ns)
	if code != 1 {
		t.Errorf("kubectl diff of the update: exit code %d, want 1", code)
	}
	wantEqual(t, "diff of the update", diff, `diff LIVE/apps.v1.Deployment.default.nginx-deployment MERGED/apps.v1.Deployment.default.nginx-deployment
@@ -5,13 +5,12 @@
     kubectl.kubernetes.io/last-applied-configuration: |
       `+annotation1+`
   creationTimestamp: "TIME"
-  generation: 2
+  generation: 3
   name: nginx-deployment
   namespace: default
   resourceVersion: "RV"
   uid: UID
 spec:
-  minReadySeconds: 5
   progressDeadlineSeconds: 600
   replicas: 2
   revisionHistoryLimit: 10
@@ -29,7 +28,7 @@
         app: nginx
     spec:
       containers:
-      - image: nginx:1.14.2
+      - image: nginx:1.16.1
         imagePullPolicy: IfNotPresent
         name: nginx
         ports:`)
	wantEqual(t, "apply the update", l.must(t, "apply", "-f", update), "deployment.apps/nginx-deployment configured")
	// replicas keeps the value kubectl scale set; image changes; minReadySeconds is cleared.
	const annotation2 = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"nginx-deployment","namespace":"default"},"spec":{"selector":{"matchLabels":{"app":"nginx"}},"template":{"metadata":{"labels":{"app":"nginx"}},"spec":{"containers":[{"image":"nginx:1.16.1","name":"nginx","ports":[{"containerPort":80}]}]}}}}`
	want := strings.Replace(deploymentDefaults, "  minReadySeconds: 5\n", "", 1)
	want = strings.Replace(want, "replicas: 1", "replicas: 2", 1)
	want = strings.Replace(want, "nginx:1.14.2", "nginx:1.16.1", 1)
	wantEqual(t, "get -o yaml after the update", masked(l.must(t, "get", "-f", update, "-o", "yaml")), `apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: |
      `+annotation2+`
  creationTimestamp: "TIME"
  generation: 3
  name: nginx-deployment
  namespace: default
  resourceVersion: "RV"
  uid: UID
`+want)
	l.wantManaged(t, "deployment/nginx-deployment", ns,
		`kubectl Update /scale apps/v1 {"f:spec":{"f:replicas":{}}}`,
		`kubectl-client-side-apply Update apps/v1 {"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},`+
			`"f:spec":{"f:progressDeadlineSeconds":{},"f:revisionHistoryLimit":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},`+
			`"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},`+
			`"f:ports":{".":{},"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},`+
			`"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}}`)

	// Clearing a server-defaulted field with null re-defaults it.
	wantEqual(t, "apply replicas: null", l.mustIn(t, strings.Replace(updateDeployment, "spec:\n", "spec:\n  replicas: null\n", 1), "apply", "-f", "-"),
		"deployment.apps/nginx-deployment configured")
	wantEqual(t, "replicas re-defaulted", l.field(t, "deployment/nginx-deployment", ns, "{.spec.replicas}"), "1")

	wantEqual(t, "delete -f", l.must(t, "delete", "-f", update), `deployment.apps "nginx-deployment" deleted`)
	wantEqual(t, "gone", l.fails(t, "", "get", "-f", update), `Error from server (NotFound): deployments.apps "nginx-deployment" not found`)
}

func seedDeploymentMergeContainersAndArgs(t *testing.T, l *lapisProc) {
	const ns = "merge"
	deployment := func(containers string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: merge\n  namespace: merge\nspec:\n  selector:\n    matchLabels:\n      app: merge\n" +
			"  template:\n    metadata:\n      labels:\n        app: merge\n    spec:\n      containers:\n" + containers
	}
	// last-applied-configuration: nginx with args [a, b], helpers a and b.
	wantEqual(t, "create", l.mustIn(t, deployment(`      - name: nginx
        image: nginx:1.16
        args: ["a", "b"]
      - name: nginx-helper-a
        image: helper:1.3
      - name: nginx-helper-b
        image: helper:1.3
`), "apply", "-f", "-"), "deployment.apps/merge created")
	// The live configuration gains args d, args [run] on helper b, and helper d.
	l.must(t, "patch", "deployment/merge", "-n", ns, "-p",
		`{"spec":{"template":{"spec":{"containers":[{"name":"nginx","args":["a","b","d"]},{"name":"nginx-helper-b","args":["run"]},{"name":"nginx-helper-d","image":"helper:1.3"}]}}}}`)
	containers := `{range .spec.template.spec.containers[*]}{.name} {.image} {.args}{"\n"}{end}`
	wantEqual(t, "live containers", l.field(t, "deployment/merge", ns, containers),
		"nginx nginx:1.16 [\"a\",\"b\",\"d\"]\nnginx-helper-a helper:1.3 \nnginx-helper-b helper:1.3 [\"run\"]\nnginx-helper-d helper:1.3")
	// The file: args [a, c]; helper a dropped, helper c added.
	wantEqual(t, "apply", l.mustIn(t, deployment(`      - name: nginx
        image: nginx:1.16
        args: ["a", "c"]
      - name: nginx-helper-b
        image: helper:1.3
      - name: nginx-helper-c
        image: helper:1.3
`), "apply", "-f", "-"), "deployment.apps/merge configured")
	// args is replaced; helper a is deleted, b keeps its args, c is added and d kept (kube
	// puts c after d: the document says the order is not preserved).
	wantEqual(t, "merged containers", l.field(t, "deployment/merge", ns, containers),
		"nginx nginx:1.16 [\"a\",\"c\"]\nnginx-helper-b helper:1.3 [\"run\"]\nnginx-helper-d helper:1.3 \nnginx-helper-c helper:1.3")
}

func seedDeploymentRecreateStrategy(t *testing.T, l *lapisProc) {
	const ns = "recreate"
	dir := t.TempDir()
	withoutStrategy := writeIn(t, dir, "deployment.yaml", strings.Replace(simpleDeployment, "  minReadySeconds: 5\n", "", 1))
	recreate := writeIn(t, dir, "recreate.yaml", strings.Replace(simpleDeployment, "  minReadySeconds: 5\n", "  strategy:\n    type: Recreate # updated value\n", 1))
	l.must(t, "apply", "-n", ns, "-f", withoutStrategy)
	wantEqual(t, "defaulted strategy", l.field(t, "deployment/nginx-deployment", ns, "{.spec.strategy}"),
		`{"rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"},"type":"RollingUpdate"}`)

	// The document's error: type Recreate with the defaulted rollingUpdate still there.
	const invalid = "The Deployment \"nginx-deployment\" is invalid: spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"
	wantEqual(t, "merge patch", l.fails(t, "", "patch", "deployment/nginx-deployment", "-n", ns, "--type=merge", "-p", `{"spec":{"strategy":{"type":"Recreate"}}}`), invalid)
	wantEqual(t, "strategic merge patch", l.fails(t, "", "patch", "deployment/nginx-deployment", "-n", ns, "-p", `{"spec":{"strategy":{"type":"Recreate"}}}`), invalid)
	wantEqual(t, "server-side apply", l.fails(t, "", "apply", "--server-side", "--force-conflicts", "-n", ns, "-f", recreate), invalid)
	a := l.send(t, "PATCH", "/apis/apps/v1/namespaces/recreate/deployments/nginx-deployment", `{"spec":{"strategy":{"type":"Recreate"}}}`,
		"Content-Type: application/merge-patch+json")
	wantJSON(t, "the error as a Status", a.code, a.body, 422, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",`+
		"\"message\":\"Deployment.apps \\\"nginx-deployment\\\" is invalid: spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'\","+
		`"reason":"Invalid","details":{"name":"nginx-deployment","group":"apps","kind":"Deployment","causes":[{"reason":"FieldValueForbidden",`+
		"\"message\":\"Forbidden: may not be specified when strategy `type` is 'Recreate'\",\"field\":\"spec.strategy.rollingUpdate\"}]},\"code\":422}")
	wantEqual(t, "strategy unchanged", l.field(t, "deployment/nginx-deployment", ns, "{.spec.strategy.type}"), "RollingUpdate")

	// kubectl apply itself no longer fails as the document shows: strategy has the patch
	// strategy retainKeys, so kubectl's patch clears rollingUpdate along with the type change.
	wantEqual(t, "client-side apply", l.must(t, "apply", "-n", ns, "-f", recreate), "deployment.apps/nginx-deployment configured")
	wantEqual(t, "strategy after apply", l.field(t, "deployment/nginx-deployment", ns, "{.spec.strategy}"), `{"type":"Recreate"}`)
}

func seedDeploymentPruneDefaultAllowlist(t *testing.T, l *lapisProc) {
	const ns = "prune"
	dir := t.TempDir()
	writeIn(t, dir, "deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: nginx-deployment\n  labels:\n    app: nginx\n"+
		"spec:\n  selector:\n    matchLabels:\n      app: nginx\n  template:\n    metadata:\n      labels:\n        app: nginx\n    spec:\n      containers:\n      - name: nginx\n        image: nginx:1.14.2\n")
	writeIn(t, dir, "service.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: nginx\n  labels:\n    app: nginx\nspec:\n  selector:\n    app: nginx\n  ports:\n  - port: 80\n")
	writeIn(t, dir, "configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nginx-config\n  labels:\n    app: nginx\ndata:\n  color: blue\n")
	wantEqual(t, "apply", l.must(t, "apply", "-n", ns, "-f", dir, "--prune", "-l", "app=nginx"),
		"configmap/nginx-config created\ndeployment.apps/nginx-deployment created\nservice/nginx created")
	// Objects with the label that apply did not create are not pruned.
	l.must(t, "create", "deployment", "other", "-n", ns, "--image=nginx")
	l.must(t, "label", "deployment/other", "-n", ns, "app=nginx", "--overwrite")
	for _, f := range []string{"deployment.yaml", "service.yaml"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	// Without --prune-allowlist kubectl lists every type of its default list, v1 Endpoints
	// (deprecated in 1.33, so kube warns) and cluster-scoped types included.
	out, errOut, err := l.kubectl("apply", "-n", ns, "-f", dir, "--prune", "-l", "app=nginx")
	if err != nil {
		t.Fatalf("apply --prune: %v\n%s%s", err, out, errOut)
	}
	wantEqual(t, "prune", out, "configmap/nginx-config unchanged\nservice/nginx pruned\ndeployment.apps/nginx-deployment pruned")
	wantContains(t, "prune warnings", errOut, "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\n")
	wantEqual(t, "left", l.must(t, "get", "deployments,services,configmaps", "-n", ns, "-l", "app=nginx", "-o", "name"),
		"deployment.apps/other\nconfigmap/nginx-config")
}

func seedDeploymentPruneApplySet(t *testing.T, l *lapisProc) {
	const ns = "applyset"
	dir := t.TempDir()
	writeIn(t, dir, "deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: nginx-deployment\n"+
		"spec:\n  selector:\n    matchLabels:\n      app: nginx\n  template:\n    metadata:\n      labels:\n        app: nginx\n    spec:\n      containers:\n      - name: nginx\n        image: nginx:1.14.2\n")
	writeIn(t, dir, "service.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: nginx\nspec:\n  selector:\n    app: nginx\n  ports:\n  - port: 80\n")
	env := append(l.env(), "KUBECTL_APPLYSET=true")
	applySet := func() string {
		t.Helper()
		out, errOut, err := runCmd(env, "", kubectlBin, "apply", "-n", ns, "-f", dir, "--prune", "--applyset=nginx")
		if err != nil {
			t.Fatalf("apply --applyset: %v\n%s%s", err, out, errOut)
		}
		return out
	}
	wantEqual(t, "apply", applySet(), "deployment.apps/nginx-deployment created\nservice/nginx created")
	sum := sha256.Sum256([]byte("nginx.applyset.Secret.")) // the parent's name, namespace, kind and group
	id := "applyset-" + base64.RawURLEncoding.EncodeToString(sum[:]) + "-v1"
	wantEqual(t, "parent", l.field(t, "secret/nginx", ns, `{.metadata.labels} {.metadata.annotations.applyset\.kubernetes\.io/contains-group-kinds}`),
		`{"applyset.kubernetes.io/id":"`+id+`"} Deployment.apps,Service`)
	wantEqual(t, "members", l.field(t, "deployment/nginx-deployment", ns, "{.metadata.labels}")+" "+l.field(t, "service/nginx", ns, "{.metadata.labels}"),
		`{"applyset.kubernetes.io/part-of":"`+id+`"} {"applyset.kubernetes.io/part-of":"`+id+`"}`)
	if err := os.Remove(filepath.Join(dir, "service.yaml")); err != nil {
		t.Fatal(err)
	}
	wantEqual(t, "prune", applySet(), "deployment.apps/nginx-deployment unchanged\nservice/nginx pruned")
	wantEqual(t, "parent after prune", l.field(t, "secret/nginx", ns, `{.metadata.annotations.applyset\.kubernetes\.io/contains-group-kinds}`), "Deployment.apps")
	wantEqual(t, "left", l.must(t, "get", "deployments,services", "-n", ns, "-o", "name"), "deployment.apps/nginx-deployment")
}

// inNamespace puts metadata.namespace into a manifest.
func inNamespace(manifest, ns string) string {
	return strings.Replace(manifest, "metadata:\n", "metadata:\n  namespace: "+ns+"\n", 1)
}

// prefixLines puts prefix before every line of text.
func prefixLines(prefix, text string) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}

var (
	ageCell = regexp.MustCompile(`^\d+(s|m|m\d+s)$`)
	ipCell  = regexp.MustCompile(`^\d+\.\d+\.\d+\.\d+$`)
)

// columns normalizes kubectl's table output: single spaces between cells, ages as AGE and IP
// addresses as IP.
func columns(table string) string {
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		cells := strings.Fields(line)
		for i, c := range cells {
			switch {
			case ageCell.MatchString(c):
				cells[i] = "AGE"
			case ipCell.MatchString(c):
				cells[i] = "IP"
			}
		}
		lines = append(lines, strings.Join(cells, " "))
	}
	return strings.Join(lines, "\n")
}

// wantJSON compares a JSON answer with want, both compacted.
func wantJSON(t testing.TB, what string, code int, body string, wantCode int, want string) {
	t.Helper()
	if code != wantCode {
		t.Errorf("%s: status %d, want %d: %s", what, code, wantCode, body)
	}
	wantEqual(t, what, compact(t, body), compact(t, want))
}

func compact(t testing.TB, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// ssaDeployment is application/ssa/nginx-deployment.yaml.
const ssaDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx-deployment
  labels:
    app.kubernetes.io/name: nginx
spec:
  replicas: 3
  selector:
    matchLabels:
      app.kubernetes.io/name: nginx
  template:
    metadata:
      labels:
        app.kubernetes.io/name: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:1.14.2
`

// hpaUserAgent is the user agent of kube-controller-manager's HPA controller; kube names the
// field manager after its first part.
const hpaUserAgent = "User-Agent: kube-controller-manager/v1.37.2 (linux/amd64) kubernetes/6c1ba5a/horizontal-pod-autoscaler"

// hpaScales does what the HPA controller does to scale its target: read the scale subresource
// and write it back with the new replicas (an update, never an apply).
func (l *lapisProc) hpaScales(t testing.TB, ns, name string, replicas int) {
	t.Helper()
	path := "/apis/apps/v1/namespaces/" + ns + "/deployments/" + name + "/scale"
	var scale map[string]any
	if err := json.Unmarshal([]byte(l.sendOK(t, 200, "GET", path, "", hpaUserAgent).body), &scale); err != nil {
		t.Fatal(err)
	}
	scale["spec"] = map[string]any{"replicas": replicas}
	body, _ := json.Marshal(scale)
	l.sendOK(t, 200, "PUT", path, string(body), hpaUserAgent)
}

// TestSeedSSAHandoverToHPA follows "Transferring ownership" of the Server-Side Apply document.
func TestSeedSSAHandoverToHPA(t *testing.T) {
	t.Parallel()
	l := seedServer(t)
	for _, ns := range []string{"handover", "basic", "race"} {
		l.must(t, "create", "ns", ns)
	}
	noReplicas := strings.Replace(ssaDeployment, "  replicas: 3\n", "", 1)
	const replicasOnly = "# Save this file as 'nginx-deployment-replicas-only.yaml'.\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: nginx-deployment\nspec:\n  replicas: 3\n"
	const kubectlFields = `"f:metadata":{"f:labels":{"f:app.kubernetes.io/name":{}}},"f:spec":{%s"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app.kubernetes.io/name":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{}}}}}}`
	withReplicas := `kubectl Apply apps/v1 {` + strings.Replace(kubectlFields, "%s", `"f:replicas":{},`, 1) + `}`
	withoutReplicas := `kubectl Apply apps/v1 {` + strings.Replace(kubectlFields, "%s", "", 1) + `}`

	t.Run("the advanced way: a private manager holds replicas", func(t *testing.T) {
		t.Parallel()
		const ns = "handover"
		wantEqual(t, "apply", l.ssa(t, "", ssaDeployment, "-n", ns), "deployment.apps/nginx-deployment serverside-applied")
		l.wantManaged(t, "deployment/nginx-deployment", ns, withReplicas)

		// kubectl autoscale makes an autoscaling/v1 HPA; kube stores and serves it as autoscaling/v2.
		wantEqual(t, "autoscale", l.must(t, "autoscale", "deployment", "nginx-deployment", "-n", ns, "--cpu-percent=50", "--min=1", "--max=10"),
			"horizontalpodautoscaler.autoscaling/nginx-deployment autoscaled")
		wantEqual(t, "hpa (v2)", masked(l.must(t, "get", "hpa/nginx-deployment", "-n", ns, "-o", "yaml")), `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  creationTimestamp: "TIME"
  generation: 1
  name: nginx-deployment
  namespace: handover
  resourceVersion: "RV"
  uid: UID
spec:
  maxReplicas: 10
  metrics:
  - resource:
      name: cpu
      target:
        averageUtilization: 50
        type: Utilization
    type: Resource
  minReplicas: 1
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: nginx-deployment
status:
  currentMetrics: null
  desiredReplicas: 0`)
		wantEqual(t, "hpa (v1)", l.field(t, "horizontalpodautoscalers.v1.autoscaling/nginx-deployment", ns, "{.apiVersion} {.spec}"),
			`autoscaling/v1 {"maxReplicas":10,"minReplicas":1,"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"nginx-deployment"},"targetCPUUtilizationPercentage":50}`)
		l.wantManaged(t, "hpa/nginx-deployment", ns,
			`kubectl-autoscale Update autoscaling/v1 {"f:spec":{"f:maxReplicas":{},"f:minReplicas":{},"f:scaleTargetRef":{},"f:targetCPUUtilizationPercentage":{}}}`)
		wantEqual(t, "get hpa", columns(l.must(t, "get", "hpa", "-n", ns)),
			"NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE\nnginx-deployment Deployment/nginx-deployment cpu: <unknown>/50% 1 10 0 AGE")

		// The private manager takes a share of replicas...
		wantEqual(t, "handover", l.mustIn(t, replicasOnly, "apply", "-n", ns, "-f", "-", "--server-side", "--field-manager=handover-to-hpa", "--validate=false"),
			"deployment.apps/nginx-deployment serverside-applied")
		l.wantManaged(t, "deployment/nginx-deployment", ns, withReplicas, `handover-to-hpa Apply apps/v1 {"f:spec":{"f:replicas":{}}}`)
		// ...so the user may remove replicas from the manifest without it changing.
		wantEqual(t, "apply without replicas", l.ssa(t, "", noReplicas, "-n", ns), "deployment.apps/nginx-deployment serverside-applied")
		wantEqual(t, "replicas kept", l.field(t, "deployment/nginx-deployment", ns, "{.spec.replicas}"), "3")
		l.wantManaged(t, "deployment/nginx-deployment", ns, withoutReplicas, `handover-to-hpa Apply apps/v1 {"f:spec":{"f:replicas":{}}}`)

		// The scale subresource the HPA controller reads (no controller runs: status.replicas is 0).
		a := l.sendOK(t, 200, "GET", "/apis/apps/v1/namespaces/handover/deployments/nginx-deployment/scale", "")
		var scale struct {
			Kind, APIVersion string
			Metadata         struct{ Name, Namespace string }
			Spec             json.RawMessage
			Status           json.RawMessage
		}
		if err := json.Unmarshal([]byte(a.body), &scale); err != nil {
			t.Fatal(err)
		}
		wantEqual(t, "scale", strings.Join([]string{scale.Kind, scale.APIVersion, scale.Metadata.Namespace, scale.Metadata.Name, string(scale.Spec), string(scale.Status)}, " "),
			`Scale autoscaling/v1 handover nginx-deployment {"replicas":3} {"replicas":0,"selector":"app.kubernetes.io/name=nginx"}`)

		// When the HPA controller sets replicas, the temporary manager owns nothing and is gone.
		l.hpaScales(t, ns, "nginx-deployment", 5)
		wantEqual(t, "replicas", l.field(t, "deployment/nginx-deployment", ns, "{.spec.replicas}"), "5")
		l.wantManaged(t, "deployment/nginx-deployment", ns, withoutReplicas, `kube-controller-manager Update /scale apps/v1 {"f:spec":{"f:replicas":{}}}`)
		l.ssa(t, "", noReplicas, "-n", ns)
		wantEqual(t, "replicas after re-applying", l.field(t, "deployment/nginx-deployment", ns, "{.spec.replicas}"), "5")
	})

	t.Run("the basic way: a conflict when the HPA takes replicas", func(t *testing.T) {
		t.Parallel()
		const ns = "basic"
		l.ssa(t, "", ssaDeployment, "-n", ns)
		// The HPA written as autoscaling/v2, server-side.
		const hpa = "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: nginx-deployment\nspec:\n  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: nginx-deployment\n" +
			"  minReplicas: 1\n  maxReplicas: 10\n  metrics:\n  - type: Resource\n    resource:\n      name: cpu\n      target:\n        type: Utilization\n        averageUtilization: 50\n"
		wantEqual(t, "hpa", l.ssa(t, "", hpa, "-n", ns), "horizontalpodautoscaler.autoscaling/nginx-deployment serverside-applied")
		l.wantManaged(t, "hpa/nginx-deployment", ns, `kubectl Apply autoscaling/v2 {"f:spec":{"f:maxReplicas":{},"f:metrics":{},"f:minReplicas":{},"f:scaleTargetRef":{"f:apiVersion":{},"f:kind":{},"f:name":{}}}}`)
		wantEqual(t, "hpa (v1)", l.field(t, "horizontalpodautoscalers.v1.autoscaling/nginx-deployment", ns, "{.spec.targetCPUUtilizationPercentage}"), "50")

		l.hpaScales(t, ns, "nginx-deployment", 5)
		l.ssaConflict(t, "", inNamespace(ssaDeployment, ns), `Apply failed with 1 conflict: conflict with "kube-controller-manager" with subresource "scale" using apps/v1: .spec.replicas`)
		wantEqual(t, "replicas after the conflict", l.field(t, "deployment/nginx-deployment", ns, "{.spec.replicas}"), "5")
		// Now it is safe to remove replicas from the configuration.
		l.ssa(t, "", noReplicas, "-n", ns)
		wantEqual(t, "replicas", l.field(t, "deployment/nginx-deployment", ns, "{.spec.replicas}"), "5")
		l.wantManaged(t, "deployment/nginx-deployment", ns, withoutReplicas, `kube-controller-manager Update /scale apps/v1 {"f:spec":{"f:replicas":{}}}`)
	})

	t.Run("the race: removing replicas before the HPA owns it", func(t *testing.T) {
		t.Parallel()
		const ns = "race"
		l.ssa(t, "", ssaDeployment, "-n", ns)
		l.ssa(t, "", noReplicas, "-n", ns)
		// The API server sets replicas to 1, the default replica count for Deployment.
		wantEqual(t, "replicas", l.field(t, "deployment/nginx-deployment", ns, "{.spec.replicas}"), "1")
		l.wantManaged(t, "deployment/nginx-deployment", ns, withoutReplicas)
	})
}

// seedPod is a Pod as the API-concepts document's examples use them.
func seedPod(name string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  labels:\n    app: web\nspec:\n  containers:\n  - name: nginx\n    image: nginx:1.14.2\n"
}

// seedPods is several Pods in one manifest.
func seedPods(names ...string) string {
	var docs []string
	for _, n := range names {
		docs = append(docs, seedPod(n))
	}
	return strings.Join(docs, "---\n")
}

// podDefaults is the Pod of seedPod("web-1") in namespace test as kube-apiserver 1.37 stores it:
// defaulted, and changed by the ServiceAccount, DefaultTolerationSeconds and Priority admission
// plugins.
const podDefaults = `apiVersion: v1
kind: Pod
metadata:
  creationTimestamp: "TIME"
  generation: 1
  labels:
    app: web
  name: web-1
  namespace: test
  resourceVersion: "RV"
  uid: UID
spec:
  containers:
  - image: nginx:1.14.2
    imagePullPolicy: IfNotPresent
    name: nginx
    resources: {}
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
    volumeMounts:
    - mountPath: /var/run/secrets/kubernetes.io/serviceaccount
      name: kube-api-access-XXXXX
      readOnly: true
  dnsPolicy: ClusterFirst
  enableServiceLinks: true
  preemptionPolicy: PreemptLowerPriority
  priority: 0
  restartPolicy: Always
  schedulerName: default-scheduler
  securityContext: {}
  serviceAccount: default
  serviceAccountName: default
  terminationGracePeriodSeconds: 30
  tolerations:
  - effect: NoExecute
    key: node.kubernetes.io/not-ready
    operator: Exists
    tolerationSeconds: 300
  - effect: NoExecute
    key: node.kubernetes.io/unreachable
    operator: Exists
    tolerationSeconds: 300
  volumes:
  - name: kube-api-access-XXXXX
    projected:
      defaultMode: 420
      sources:
      - serviceAccountToken:
          expirationSeconds: 3607
          path: token
      - configMap:
          items:
          - key: ca.crt
            path: ca.crt
          name: kube-root-ca.crt
      - downwardAPI:
          items:
          - fieldRef:
              apiVersion: v1
              fieldPath: metadata.namespace
            path: namespace
status:
  phase: Pending
  qosClass: BestEffort
`

// podColumns is the columnDefinitions of kube-apiserver 1.37's Table of Pods.
const podColumns = `[{"name":"Name","type":"string","format":"name","description":"Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names","priority":0},` +
	`{"name":"Ready","type":"string","format":"","description":"The aggregate readiness state of this pod for accepting traffic.","priority":0},` +
	`{"name":"Status","type":"string","format":"","description":"The aggregate status of the containers in this pod.","priority":0},` +
	`{"name":"Restarts","type":"string","format":"","description":"The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.","priority":0},` +
	`{"name":"Age","type":"string","format":"","description":"CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata","priority":0},` +
	`{"name":"IP","type":"string","format":"","description":"podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.","priority":1},` +
	`{"name":"Node","type":"string","format":"","description":"NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename","priority":1},` +
	`{"name":"Nominated Node","type":"string","format":"","description":"nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.","priority":1},` +
	`{"name":"Readiness Gates","type":"string","format":"","description":"If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates","priority":1}]`

// podList is the part of a PodList the list checks read.
type podList struct {
	Kind     string `json:"kind"`
	Metadata struct {
		ResourceVersion    string `json:"resourceVersion"`
		Continue           string `json:"continue"`
		RemainingItemCount *int64 `json:"remainingItemCount"`
	} `json:"metadata"`
	Items []struct {
		Metadata meta `json:"metadata"`
	} `json:"items"`
}

func (p podList) names() string {
	var names []string
	for _, i := range p.Items {
		names = append(names, i.Metadata.Name)
	}
	return strings.Join(names, " ")
}

func (l *lapisProc) listPods(t testing.TB, path string) podList {
	t.Helper()
	var list podList
	if err := json.Unmarshal([]byte(l.sendOK(t, 200, "GET", path, "").body), &list); err != nil {
		t.Fatal(err)
	}
	return list
}

// eventLine is "TYPE name" plus, for a deleted or deleting object, its grace period.
func eventLine(t testing.TB, e watchEvent) string {
	m := e.meta(t)
	line := e.Type + " " + m.Name
	if m.DeletionTimestamp != "" && m.DeletionGracePeriodSeconds != nil {
		line += " deleting(grace " + strconv.FormatInt(*m.DeletionGracePeriodSeconds, 10) + ")"
	}
	if len(m.Labels) > 1 {
		line += " relabeled"
	}
	return line
}

// TestSeedAPIConceptsPods follows the Pod examples of the API-concepts document.
func TestSeedAPIConceptsPods(t *testing.T) {
	t.Parallel()
	l := seedServer(t)
	namespaces := []string{"test", "watch", "kwatch", "chunks", "tables", "proto", "dryrun", "finalizers"}
	for _, ns := range namespaces {
		l.must(t, "create", "ns", ns)
	}
	// Pods need the namespace's default ServiceAccount, which a controller makes.
	for _, ns := range namespaces {
		poll.Eventually(t, 10*time.Second, "the default ServiceAccount of "+ns, func() (bool, string) {
			out, errOut, err := l.kubectl("get", "serviceaccount", "default", "-n", ns, "-o", "name")
			return err == nil, out + errOut
		})
	}

	// Each step has its own namespace, so the steps run side by side.
	inParallel(t, l, []step{
		{"a Pod as kube stores it", seedPodAsStored},
		{"watch from a list's resourceVersion", seedPodWatchFromListRV},
		{"kubectl get pods --watch", seedPodKubectlWatch},
		{"chunked lists", seedPodChunkedLists},
		{"tables", seedPodTables},
		{"protobuf", seedPodProtobuf},
		{"dry run", seedPodDryRun},
		{"finalizers", seedPodFinalizers},
	})
}

func seedPodAsStored(t *testing.T, l *lapisProc) {
	const ns = "test"
	wantEqual(t, "create", l.mustIn(t, seedPod("web-1"), "create", "-n", ns, "-f", "-"), "pod/web-1 created")
	wantEqual(t, "get -o yaml", masked(l.must(t, "get", "pod", "web-1", "-n", ns, "-o", "yaml")), podDefaults)
	// Only the fields of the request (and their defaults) are the creator's; what admission adds is no one's.
	l.wantManaged(t, "pod/web-1", ns, `kubectl-create Update v1 {"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}`)
	wantEqual(t, "get", columns(l.must(t, "get", "pods", "-n", ns)), "NAME READY STATUS RESTARTS AGE\nweb-1 0/1 Pending 0 AGE")
	wantEqual(t, "get -o wide", columns(l.must(t, "get", "pods", "-n", ns, "-o", "wide")),
		"NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES\nweb-1 0/1 Pending 0 AGE <none> <none> <none> <none>")
}

func seedPodWatchFromListRV(t *testing.T, l *lapisProc) {
	const ns = "watch"
	l.mustIn(t, seedPod("web-0"), "create", "-n", ns, "-f", "-")
	list := l.listPods(t, "/api/v1/namespaces/watch/pods")
	if list.Kind != "PodList" || list.names() != "web-0" || list.Metadata.ResourceVersion == "" {
		t.Fatalf("list: %+v", list)
	}
	rv := list.Metadata.ResourceVersion
	// Start at exact: only changes after the list's resourceVersion, no synthetic ADDED for web-0.
	header, events := l.watch(t, "/api/v1/namespaces/watch/pods?watch=1&resourceVersion="+rv)
	wantEqual(t, "watch Content-Type", header.Get("Content-Type"), "application/json")
	noEvent(t, events, 300*time.Millisecond)
	l.mustIn(t, seedPod("web-1"), "create", "-n", ns, "-f", "-")
	l.must(t, "label", "pod/web-1", "-n", ns, "tier=front")
	// A Pod no node runs is deleted at once: kube first marks it (grace period 0), then removes it.
	wantEqual(t, "delete", l.must(t, "delete", "pod/web-1", "-n", ns, "--wait=false"), `pod "web-1" deleted`)
	got := nextEvents(t, events, 4)
	var lines, rvs []string
	for _, e := range got {
		lines = append(lines, eventLine(t, e))
		rvs = append(rvs, e.meta(t).ResourceVersion)
	}
	wantEqual(t, "events", strings.Join(lines, "\n"), "ADDED web-1\nMODIFIED web-1 relabeled\nMODIFIED web-1 deleting(grace 0) relabeled\nDELETED web-1 deleting(grace 0) relabeled")
	for i, v := range rvs {
		if v == "" || v == rv || (i > 0 && v == rvs[i-1]) {
			t.Errorf("event resourceVersions %q after the list's %s", rvs, rv)
			break
		}
	}
	// The same resourceVersion again replays the same events.
	_, again := l.watch(t, "/api/v1/namespaces/watch/pods?watch=1&resourceVersion="+rv)
	var replayed []string
	for _, e := range nextEvents(t, again, 4) {
		replayed = append(replayed, e.meta(t).ResourceVersion)
	}
	wantEqual(t, "replayed resourceVersions", strings.Join(replayed, " "), strings.Join(rvs, " "))
	// Without a resourceVersion: synthetic ADDED events for what exists, then changes.
	_, fresh := l.watch(t, "/api/v1/namespaces/watch/pods?watch=1")
	wantEqual(t, "initial events", eventLine(t, nextEvents(t, fresh, 1)[0]), "ADDED web-0")
	noEvent(t, fresh, 300*time.Millisecond)
}

func seedPodKubectlWatch(t *testing.T, l *lapisProc) {
	const ns = "kwatch"
	l.mustIn(t, seedPod("web-0"), "create", "-n", ns, "-f", "-")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBin, "get", "pods", "-n", ns, "--watch")
	cmd.Env = l.env()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	read := func(n int) []string {
		t.Helper()
		var got []string
		timeout := time.After(10 * time.Second)
		for len(got) < n {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("kubectl get --watch ended after %q", got)
				}
				got = append(got, columns(line))
			case <-timeout:
				t.Fatalf("kubectl get --watch printed %q, want %d lines", got, n)
			}
		}
		return got
	}
	wantEqual(t, "the list", strings.Join(read(2), "\n"), "NAME READY STATUS RESTARTS AGE\nweb-0 0/1 Pending 0 AGE")
	l.mustIn(t, seedPod("web-1"), "create", "-n", ns, "-f", "-")
	wantEqual(t, "created", strings.Join(read(1), "\n"), "web-1 0/1 Pending 0 AGE")
	l.must(t, "delete", "pod/web-1", "-n", ns, "--wait=false")
	wantEqual(t, "deleted", strings.Join(read(2), "\n"), "web-1 0/1 Terminating 0 AGE\nweb-1 0/1 Terminating 0 AGE")
}

func seedPodChunkedLists(t *testing.T, l *lapisProc) {
	const ns = "chunks"
	l.mustIn(t, seedPods("p1", "p2", "p3", "p4", "p5"), "create", "-n", ns, "-f", "-")
	first := l.listPods(t, "/api/v1/namespaces/chunks/pods?limit=2")
	// A Pod created after the first chunk is not in the following ones: they are one snapshot.
	l.mustIn(t, seedPod("p6"), "create", "-n", ns, "-f", "-")
	second := l.listPods(t, "/api/v1/namespaces/chunks/pods?limit=2&continue="+url.QueryEscape(first.Metadata.Continue))
	third := l.listPods(t, "/api/v1/namespaces/chunks/pods?limit=2&continue="+url.QueryEscape(second.Metadata.Continue))
	chunk := func(p podList) string {
		remaining := "-"
		if p.Metadata.RemainingItemCount != nil {
			remaining = strconv.FormatInt(*p.Metadata.RemainingItemCount, 10)
		}
		return fmt.Sprintf("%s | remaining %s | continue %t | same rv %t", p.names(), remaining, p.Metadata.Continue != "", p.Metadata.ResourceVersion == first.Metadata.ResourceVersion)
	}
	wantEqual(t, "chunks", chunk(first)+"\n"+chunk(second)+"\n"+chunk(third),
		"p1 p2 | remaining 3 | continue true | same rv true\np3 p4 | remaining 1 | continue true | same rv true\np5 | remaining - | continue false | same rv true")
	wantEqual(t, "a new list", l.listPods(t, "/api/v1/namespaces/chunks/pods").names(), "p1 p2 p3 p4 p5 p6")
	a := l.send(t, "GET", "/api/v1/namespaces/chunks/pods?limit=2&resourceVersion="+first.Metadata.ResourceVersion+"&continue="+url.QueryEscape(first.Metadata.Continue), "")
	wantJSON(t, "continue with a resourceVersion", a.code, a.body, 400,
		`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"specifying resource version is not allowed when using continue","reason":"BadRequest","code":400}`)
	wantEqual(t, "kubectl --chunk-size", l.must(t, "get", "pods", "-n", ns, "--chunk-size=2", "-o", "name"),
		"pod/p1\npod/p2\npod/p3\npod/p4\npod/p5\npod/p6")
}

func seedPodTables(t *testing.T, l *lapisProc) {
	const ns = "tables"
	l.mustIn(t, seedPod("web-1"), "create", "-n", ns, "-f", "-")
	type table struct {
		Kind              string            `json:"kind"`
		APIVersion        string            `json:"apiVersion"`
		Metadata          map[string]string `json:"metadata"`
		ColumnDefinitions json.RawMessage   `json:"columnDefinitions"`
		Rows              []struct {
			Cells  []any `json:"cells"`
			Object *struct {
				Kind       string `json:"kind"`
				APIVersion string `json:"apiVersion"`
				Metadata   meta   `json:"metadata"`
			} `json:"object"`
		} `json:"rows"`
	}
	get := func(path, accept string) table {
		t.Helper()
		a := l.sendOK(t, 200, "GET", path, "", "Accept: "+accept)
		wantEqual(t, "Content-Type of "+accept, a.header.Get("Content-Type"), "application/json")
		var tab table
		if err := json.Unmarshal([]byte(a.body), &tab); err != nil {
			t.Fatal(err)
		}
		return tab
	}
	describe := func(tab table) string {
		var rows []string
		for _, r := range tab.Rows {
			var cells []string
			for _, c := range r.Cells {
				cell := fmt.Sprint(c)
				if ageCell.MatchString(cell) {
					cell = "AGE"
				}
				cells = append(cells, cell)
			}
			row := strings.Join(cells, "|")
			if r.Object != nil {
				row += " " + r.Object.Kind + " " + r.Object.APIVersion + " " + r.Object.Metadata.Name
			}
			rows = append(rows, row)
		}
		_, hasRV := tab.Metadata["resourceVersion"]
		return fmt.Sprintf("%s %s rv:%t\n%s", tab.Kind, tab.APIVersion, hasRV, strings.Join(rows, "\n"))
	}
	for _, c := range []struct{ path, accept, want string }{
		{"/api/v1/namespaces/tables/pods", "application/json;as=Table;v=v1;g=meta.k8s.io",
			`Table meta.k8s.io/v1 rv:true` + "\n" + `web-1|0/1|Pending|0|AGE|<none>|<none>|<none>|<none> PartialObjectMetadata meta.k8s.io/v1 web-1`},
		// The document's v1beta1 Table is still served, and is the answer of its fallback list.
		{"/api/v1/namespaces/tables/pods", "application/json;as=Table;g=meta.k8s.io;v=v1beta1",
			`Table meta.k8s.io/v1beta1 rv:true` + "\n" + `web-1|0/1|Pending|0|AGE|<none>|<none>|<none>|<none> PartialObjectMetadata meta.k8s.io/v1beta1 web-1`},
		{"/api/v1/namespaces/tables/pods", "application/json;as=Table;g=meta.k8s.io;v=v1beta1, application/json",
			`Table meta.k8s.io/v1beta1 rv:true` + "\n" + `web-1|0/1|Pending|0|AGE|<none>|<none>|<none>|<none> PartialObjectMetadata meta.k8s.io/v1beta1 web-1`},
		{"/api/v1/namespaces/tables/pods?includeObject=None", "application/json;as=Table;v=v1;g=meta.k8s.io",
			`Table meta.k8s.io/v1 rv:true` + "\n" + `web-1|0/1|Pending|0|AGE|<none>|<none>|<none>|<none>`},
		{"/api/v1/namespaces/tables/pods/web-1", "application/json;as=Table;v=v1;g=meta.k8s.io",
			`Table meta.k8s.io/v1 rv:true` + "\n" + `web-1|0/1|Pending|0|AGE|<none>|<none>|<none>|<none> PartialObjectMetadata meta.k8s.io/v1 web-1`},
	} {
		tab := get(c.path, c.accept)
		wantEqual(t, c.path+" as "+c.accept, describe(tab), c.want)
		wantEqual(t, "columns of "+c.path+" as "+c.accept, compact(t, string(tab.ColumnDefinitions)), compact(t, podColumns))
	}
}

func seedPodProtobuf(t *testing.T, l *lapisProc) {
	const ns = "proto"
	l.mustIn(t, seedPod("web-1"), "create", "-n", ns, "-f", "-")
	for _, accept := range []string{"application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf, application/json"} {
		a := l.sendOK(t, 200, "GET", "/api/v1/namespaces/proto/pods", "", "Accept: "+accept)
		wantEqual(t, "Content-Type for "+accept, a.header.Get("Content-Type"), "application/vnd.kubernetes.protobuf")
		if !strings.HasPrefix(a.body, "k8s\x00") {
			t.Errorf("protobuf answer does not start with the magic number: %q", a.body[:min(len(a.body), 16)])
			continue
		}
		obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(a.body), nil, nil)
		if err != nil {
			t.Fatalf("decoding the protobuf PodList: %v", err)
		}
		list, ok := obj.(*corev1.PodList)
		if !ok || gvk.String() != "/v1, Kind=PodList" || len(list.Items) != 1 || list.Items[0].Name != "web-1" ||
			list.Items[0].Spec.ServiceAccountName != "default" || list.ResourceVersion == "" {
			t.Errorf("protobuf list: %s %+v", gvk, obj)
		}
	}

	// A Pod sent as protobuf, answered in JSON.
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx:1.14.2"}}}}
	body, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), pod)
	if err != nil {
		t.Fatal(err)
	}
	a := l.sendOK(t, 201, "POST", "/api/v1/namespaces/proto/pods", string(body),
		"Content-Type: application/vnd.kubernetes.protobuf", "Accept: application/json")
	wantEqual(t, "Content-Type", a.header.Get("Content-Type"), "application/json")
	var created struct {
		Kind, APIVersion string
		Metadata         meta
		Spec             struct{ ServiceAccountName string }
	}
	if err := json.Unmarshal([]byte(a.body), &created); err != nil {
		t.Fatal(err)
	}
	wantEqual(t, "created", created.Kind+" "+created.APIVersion+" "+created.Metadata.Name+" "+created.Spec.ServiceAccountName, "Pod v1 web-2 default")

	a = l.send(t, "GET", "/api/v1/namespaces/proto/pods", "", "Accept: application/xml")
	wantJSON(t, "an unsupported Accept", a.code, a.body, 406, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",`+
		`"message":"406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch",`+
		`"reason":"NotAcceptable","details":{},"code":406}`)
}

func seedPodDryRun(t *testing.T, l *lapisProc) {
	const ns = "dryrun"
	wantEqual(t, "kubectl create --dry-run=server", l.mustIn(t, seedPod("web-1"), "create", "-n", ns, "-f", "-", "--dry-run=server"),
		"pod/web-1 created (server dry run)")
	// The answer is the object that would have been stored, admission's changes included.
	dry := masked(l.mustIn(t, seedPod("web-1"), "create", "-n", ns, "-f", "-", "--dry-run=server", "-o", "yaml"))
	wantEqual(t, "dry-run object", dry, strings.NewReplacer("namespace: test", "namespace: dryrun", "  resourceVersion: \"RV\"\n", "").Replace(podDefaults))
	wantEqual(t, "nothing created", l.fails(t, "", "get", "pod/web-1", "-n", ns), `Error from server (NotFound): pods "web-1" not found`)

	// POST ?dryRun=All with generateName: a name is generated, nothing is stored.
	a := l.sendOK(t, 201, "POST", "/api/v1/namespaces/dryrun/pods?dryRun=All",
		`{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-"},"spec":{"containers":[{"name":"nginx","image":"nginx:1.14.2"}]}}`)
	var o struct{ Metadata meta }
	if err := json.Unmarshal([]byte(a.body), &o); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^web-[a-z0-9]{5}$`).MatchString(o.Metadata.Name) {
		t.Errorf("dry-run name %q, want web- and five characters", o.Metadata.Name)
	}
	wantEqual(t, "pods after the dry runs", l.must(t, "get", "pods", "-n", ns, "-o", "name"), "")

	// A dry-run delete leaves the Pod.
	l.mustIn(t, seedPod("web-1"), "create", "-n", ns, "-f", "-")
	wantEqual(t, "kubectl delete --dry-run=server", l.must(t, "delete", "pod/web-1", "-n", ns, "--dry-run=server"), `pod "web-1" deleted (server dry run)`)
	wantEqual(t, "still there", l.must(t, "get", "pods", "-n", ns, "-o", "name"), "pod/web-1")
	a = l.send(t, "POST", "/api/v1/namespaces/dryrun/pods?dryRun=Yes", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[{"name":"a","image":"b"}]}}`)
	wantJSON(t, "an unknown dryRun value", a.code, a.body, 422, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",`+
		`"message":"CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Yes\"]: supported values: \"All\"","reason":"Invalid",`+
		`"details":{"group":"meta.k8s.io","kind":"CreateOptions","causes":[{"reason":"FieldValueNotSupported","message":"Unsupported value: [\"Yes\"]: supported values: \"All\"","field":"dryRun"}]},"code":422}`)
}

func seedPodFinalizers(t *testing.T, l *lapisProc) {
	const ns = "finalizers"
	pod := strings.Replace(seedPod("fin"), "metadata:\n", "metadata:\n  finalizers:\n  - url.io/neat-finalization\n  - other-url.io/my-finalizer\n", 1)
	l.mustIn(t, pod, "create", "-n", ns, "-f", "-")
	wantEqual(t, "delete", l.must(t, "delete", "pod/fin", "-n", ns, "--wait=false"), `pod "fin" deleted`)
	// Finalization: deletionTimestamp is set, the object stays until the last finalizer goes.
	got := l.field(t, "pod/fin", ns, "{.metadata.deletionGracePeriodSeconds} {.metadata.finalizers}")
	wantEqual(t, "deleting", got, `0 ["url.io/neat-finalization","other-url.io/my-finalizer"]`)
	if ts := l.field(t, "pod/fin", ns, "{.metadata.deletionTimestamp}"); ts == "" {
		t.Errorf("no deletionTimestamp")
	}
	wantEqual(t, "get", columns(l.must(t, "get", "pod/fin", "-n", ns)), "NAME READY STATUS RESTARTS AGE\nfin 0/1 Terminating 0 AGE")
	// Finalizers may go in any order.
	l.must(t, "patch", "pod/fin", "-n", ns, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers/1"}]`)
	wantEqual(t, "one finalizer left", l.field(t, "pod/fin", ns, "{.metadata.finalizers}"), `["url.io/neat-finalization"]`)
	l.must(t, "patch", "pod/fin", "-n", ns, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers/0"}]`)
	wantEqual(t, "removed", l.fails(t, "", "get", "pod/fin", "-n", ns), `Error from server (NotFound): pods "fin" not found`)
}

// TestSeedGetAll: kubectl get all lists the types of kube's "all" category.
func TestSeedGetAll(t *testing.T) {
	t.Parallel()
	l := seedServer(t)
	const ns = "all"
	l.must(t, "create", "ns", ns)
	poll.Eventually(t, 10*time.Second, "the default ServiceAccount", func() (bool, string) {
		out, errOut, err := l.kubectl("get", "serviceaccount", "default", "-n", ns, "-o", "name")
		return err == nil, out + errOut
	})
	wantEqual(t, "api-resources", columns(l.must(t, "api-resources", "--categories=all")), `NAME SHORTNAMES APIVERSION NAMESPACED KIND
pods po v1 true Pod
replicationcontrollers rc v1 true ReplicationController
services svc v1 true Service
daemonsets ds apps/v1 true DaemonSet
deployments deploy apps/v1 true Deployment
replicasets rs apps/v1 true ReplicaSet
statefulsets sts apps/v1 true StatefulSet
horizontalpodautoscalers hpa autoscaling/v2 true HorizontalPodAutoscaler
cronjobs cj batch/v1 true CronJob
jobs batch/v1 true Job`)

	// kube-apiserver's own Service, in default.
	wantEqual(t, "get all in default", l.must(t, "get", "all", "-n", "default", "-o", "name"), "service/kubernetes")

	l.must(t, "create", "deployment", "web", "-n", ns, "--image=nginx:1.14.2")
	l.must(t, "create", "service", "clusterip", "web", "-n", ns, "--tcp=80:80")
	// A ClusterIP Service gets an address of the service range, a single IPv4 family.
	ip := l.field(t, "service/web", ns, "{.spec.clusterIP}")
	wantEqual(t, "the Service's addresses", l.field(t, "service/web", ns, "{.spec.clusterIPs} {.spec.ipFamilies} {.spec.ipFamilyPolicy}"),
		`["`+ip+`"] ["IPv4"] SingleStack`)
	if !ipCell.MatchString(ip) {
		t.Errorf("clusterIP %q, want an IPv4 address", ip)
	}
	l.must(t, "run", "web", "-n", ns, "--image=nginx:1.14.2")
	l.must(t, "create", "configmap", "web", "-n", ns)
	l.must(t, "create", "secret", "generic", "web", "-n", ns)
	l.must(t, "autoscale", "deployment", "web", "-n", ns, "--max=3")
	l.must(t, "create", "job", "hello", "-n", ns, "--image=busybox")
	l.must(t, "create", "cronjob", "tick", "-n", ns, "--image=busybox", "--schedule=*/5 * * * *")
	wantEqual(t, "get all -o name", l.must(t, "get", "all", "-n", ns, "-o", "name"), `pod/web
service/web
deployment.apps/web
horizontalpodautoscaler.autoscaling/web
cronjob.batch/tick
job.batch/hello`)
	wantEqual(t, "get all", columns(l.must(t, "get", "all", "-n", ns)), `NAME READY STATUS RESTARTS AGE
pod/web 0/1 Pending 0 AGE

NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE
service/web ClusterIP IP <none> 80/TCP AGE

NAME READY UP-TO-DATE AVAILABLE AGE
deployment.apps/web 0/1 0 0 AGE

NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE
horizontalpodautoscaler.autoscaling/web Deployment/web cpu: <unknown>/80% 1 3 0 AGE

NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE
cronjob.batch/tick */5 * * * * <none> False 0 <none> AGE

NAME STATUS COMPLETIONS DURATION AGE
job.batch/hello Running 0/1 AGE`)
}

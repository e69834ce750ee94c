package acceptance

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestComputedResources: what kube-apiserver answers without storing — reviews, component
// statuses, bindings, evictions and the subresources that need a kubelet — answered with kube
// 1.37's own messages and codes (each expectation below is what kube-apiserver 1.37 answered).
func TestComputedResources(t *testing.T) {
	l := startLapis(t)
	l.must(t, "create", "namespace", "sub")
	l.must(t, "-n", "sub", "run", "p", "--image=nginx", "--restart=Never")

	// The steps share the server and run one after another.
	inOrder(t, l, []step{
		{"whoami and can-i", computedWhoamiAndCanI},
		{"reviews", computedReviews},
		{"componentstatuses", computedComponentStatuses},
		{"kubelet subresources of a Pod no node runs", computedKubeletSubresources},
		{"binding", computedBinding},
		{"eviction", computedEviction},
		{"token", computedToken},
	})
}

func computedWhoamiAndCanI(t *testing.T, l *lapisProc) {
	out := l.must(t, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
	wantEqual(t, "auth whoami", out, `admin ["system:masters","system:authenticated"]`)
	wantEqual(t, "auth can-i create deployments", l.must(t, "auth", "can-i", "create", "deployments"), "yes")
	wantContains(t, "auth can-i --list", l.must(t, "auth", "can-i", "--list", "-n", "sub"), "*.*")
}

func computedReviews(t *testing.T, l *lapisProc) {
	code, body := l.do(t, http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "application/json",
		`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{}}`, true)
	wantStatus(t, "an empty SelfSubjectAccessReview", code, body, 422,
		`.authorization.k8s.io "" is invalid: spec: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified`)
	code, body = l.do(t, http.MethodPost, "/apis/authorization.k8s.io/v1/namespaces/sub/localsubjectaccessreviews", "application/json",
		`{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"bob","resourceAttributes":{"verb":"get","resource":"pods","namespace":"other"}}}`, true)
	wantStatus(t, "a LocalSubjectAccessReview of another namespace", code, body, 422,
		`.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: Invalid value: "other": must match metadata.namespace`)
	code, body = l.do(t, http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", "application/json",
		`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"bob","resourceAttributes":{"verb":"get","resource":"pods"}}}`, true)
	if code != http.StatusCreated || !strings.Contains(body, `"status":{"allowed":false}`) || !strings.Contains(body, `"manager":"Go-http-client"`) {
		t.Errorf("SubjectAccessReview: %d %s; want 201, not allowed (bob has no role) and the caller's managedFields", code, body)
	}
	code, body = l.do(t, http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", "application/json",
		`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{}}`, true)
	wantStatus(t, "a SelfSubjectRulesReview without a namespace", code, body, 400, "no namespace on request")
	code, body = l.do(t, http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews", "application/json",
		`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"abc"}}`, true)
	if code != http.StatusCreated || !strings.Contains(body, `"status":{"error":"invalid bearer token","user":{}}`) {
		t.Errorf("TokenReview of an unknown token: %d %s", code, body)
	}
	code, body = l.do(t, http.MethodPost, "/apis/authentication.k8s.io/v1/tokenreviews", "application/json",
		`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"`+l.token+`"}}`, true)
	if code != http.StatusCreated || !strings.Contains(body, `"status":{"audiences":["https://kubernetes.default.svc.cluster.local"],"authenticated":true,"user":{"groups":["system:masters","system:authenticated"],"username":"admin"}}`) {
		t.Errorf("TokenReview of the admin token: %d %s", code, body)
	}
}

func computedComponentStatuses(t *testing.T, l *lapisProc) {
	out := l.must(t, "get", "cs", "etcd-0", "--no-headers")
	if f := strings.Fields(out); len(f) < 3 || f[0] != "etcd-0" || f[1] != "Healthy" || f[2] != "ok" {
		t.Errorf("kubectl get cs etcd-0: %q", out)
	}
	out = l.must(t, "get", "cs", "-o", "name")
	for _, name := range []string{"componentstatus/etcd-0", "componentstatus/scheduler", "componentstatus/controller-manager"} {
		wantContains(t, "kubectl get cs", out, name)
	}
	wantContains(t, "kubectl get cs nope", l.fails(t, "", "get", "cs", "nope"), `componentstatus "nope" not found`)
}

func computedKubeletSubresources(t *testing.T, l *lapisProc) {
	out, errOut, err := l.kubectl("-n", "sub", "logs", "p")
	if err != nil || out != "" {
		t.Errorf("kubectl logs of an unscheduled Pod: %v %q %q; want no output (kube answers 204)", err, out, errOut)
	}
	wantContains(t, "kubectl exec", l.fails(t, "", "-n", "sub", "exec", "p", "--", "ls"),
		"Error from server (BadRequest): pod p does not have a host assigned")
	wantContains(t, "kubectl logs -c nope", l.fails(t, "", "-n", "sub", "logs", "p", "-c", "nope"), "container nope is not valid for pod p")
	code, body := l.do(t, http.MethodGet, "/api/v1/namespaces/sub/pods/p/portforward?ports=80", "", "", true)
	wantStatus(t, "portforward", code, body, 400, "pod p does not have a host assigned")
	code, body = l.do(t, http.MethodGet, "/api/v1/namespaces/sub/pods/p/proxy/some/path", "", "", true)
	wantStatus(t, "pods/proxy", code, body, 400, "address not allowed")
	code, body = l.do(t, http.MethodGet, "/api/v1/namespaces/sub/pods/gone/exec?command=ls", "", "", true)
	wantStatus(t, "exec of a missing Pod", code, body, 404, `pods "gone" not found`)
	code, body = l.do(t, http.MethodGet, "/api/v1/nodes/n1/proxy/healthz", "", "", true)
	wantStatus(t, "nodes/proxy of a missing Node", code, body, 404, `nodes "n1" not found`)
	l.must(t, "-n", "sub", "create", "service", "clusterip", "s", "--tcp=80:80")
	wantContains(t, "services/proxy", l.fails(t, "", "get", "--raw", "/api/v1/namespaces/sub/services/s:80/proxy/"),
		`Error from server (ServiceUnavailable): no endpoints available for service "s"`)
	code, body = l.do(t, http.MethodGet, "/api/v1/namespaces/sub/services/s:81/proxy", "", "", true)
	wantStatus(t, "services/proxy of a port the Service lacks", code, body, 503, `no service port 81 found for service "s"`)
}

func computedBinding(t *testing.T, l *lapisProc) {
	l.must(t, "-n", "sub", "run", "b", "--image=nginx", "--restart=Never")
	bind := `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"b","annotations":{"bound":"yes"}},"target":{"kind":"Node","name":"n1"}}`
	code, body := l.do(t, http.MethodPost, "/api/v1/namespaces/sub/pods/b/binding?dryRun=All", "application/json", bind, true)
	wantStatus(t, "dry-run binding", code, body, 201, "")
	wantEqual(t, "node after a dry run", l.must(t, "-n", "sub", "get", "pod", "b", "-o", "jsonpath={.spec.nodeName}"), "")
	code, body = l.do(t, http.MethodPost, "/api/v1/namespaces/sub/pods/b/binding", "application/json", bind, true)
	wantStatus(t, "binding", code, body, 201, "")
	out := l.must(t, "-n", "sub", "get", "pod", "b", "-o",
		`jsonpath={.spec.nodeName} {.metadata.annotations.bound} {.status.conditions[?(@.type=="PodScheduled")].status} {.metadata.generation} {.metadata.managedFields[*].manager}`)
	wantEqual(t, "bound Pod", out, "n1 yes True 1 kubectl-run")
	code, body = l.do(t, http.MethodPost, "/api/v1/namespaces/sub/bindings", "application/json", bind, true)
	wantStatus(t, "binding a bound Pod", code, body, 409, `Operation cannot be fulfilled on pods/binding "b": pod b is already assigned to node "n1"`)
	code, body = l.do(t, http.MethodPost, "/api/v1/namespaces/sub/pods/b/binding", "application/json",
		`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"other"},"target":{"kind":"Node","name":"n1"}}`, true)
	wantStatus(t, "binding another name", code, body, 400, "name in URL does not match name in Binding object")
	// A bound Pod's node is looked up; kube names the resource requested.
	wantContains(t, "kubectl exec of a Pod on a missing node", l.fails(t, "", "-n", "sub", "exec", "b", "--", "ls"), `pods "n1" not found`)
}

func computedEviction(t *testing.T, l *lapisProc) {
	evict := func(name string) (int, string) {
		return l.do(t, http.MethodPost, "/api/v1/namespaces/sub/pods/"+name+"/eviction", "application/json",
			`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"`+name+`"}}`, true)
	}
	// A Pending Pod goes without asking any budget.
	l.must(t, "-n", "sub", "run", "pending", "--image=nginx", "--restart=Never")
	code, body := evict("pending")
	wantStatus(t, "evicting a pending Pod", code, body, 201, "")
	wantContains(t, "evicted Pod", l.fails(t, "", "-n", "sub", "get", "pod", "pending"), `pods "pending" not found`)

	// A running, ready Pod under a budget that allows no disruption stays.
	l.must(t, "-n", "sub", "run", "r", "--image=nginx", "--restart=Never", "--labels=app=r")
	l.must(t, "-n", "sub", "patch", "pod", "r", "--subresource=status", "--type=merge", "-p",
		`{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`)
	l.must(t, "-n", "sub", "create", "pdb", "budget", "--selector=app=r", "--min-available=1")
	code, body = evict("r")
	wantStatus(t, "eviction before the budget is processed", code, body, 429, "Cannot evict pod as it would violate the pod's disruption budget.")
	wantContains(t, "cause", body, `"causes":[{"reason":"DisruptionBudget","message":"The disruption budget budget is still being processed by the server."}]`)
	// As kube's disruption controller would: one healthy Pod, one needed.
	l.must(t, "-n", "sub", "patch", "pdb", "budget", "--subresource=status", "--type=merge", "-p",
		`{"status":{"observedGeneration":1,"currentHealthy":1,"desiredHealthy":1,"expectedPods":1,"disruptionsAllowed":0}}`)
	code, body = evict("r")
	wantStatus(t, "eviction the budget forbids", code, body, 429, "Cannot evict pod as it would violate the pod's disruption budget.")
	wantContains(t, "cause", body, `"message":"The disruption budget budget needs 1 healthy pods and has 1 currently"`)
	l.must(t, "-n", "sub", "get", "pod", "r")

	// A budget that allows one: the Pod goes and the budget records it.
	l.must(t, "-n", "sub", "patch", "pdb", "budget", "--subresource=status", "--type=merge", "-p",
		`{"status":{"currentHealthy":2,"desiredHealthy":1,"disruptionsAllowed":1}}`)
	code, body = l.do(t, http.MethodPost, "/api/v1/namespaces/sub/pods/r/eviction?dryRun=All", "application/json",
		`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"r"}}`, true)
	wantStatus(t, "dry-run eviction", code, body, 201, "")
	wantEqual(t, "budget after a dry run", l.must(t, "-n", "sub", "get", "pdb", "budget", "-o", "jsonpath={.status.disruptionsAllowed}"), "1")
	code, body = evict("r")
	wantStatus(t, "eviction the budget allows", code, body, 201, "")
	var pdb struct {
		Status struct {
			DisruptionsAllowed int               `json:"disruptionsAllowed"`
			DisruptedPods      map[string]string `json:"disruptedPods"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(l.must(t, "-n", "sub", "get", "pdb", "budget", "-o", "json")), &pdb); err != nil {
		t.Fatal(err)
	}
	if pdb.Status.DisruptionsAllowed != 0 || pdb.Status.DisruptedPods["r"] == "" {
		t.Errorf("budget after the eviction: %+v; want 0 disruptions allowed and r among the disrupted Pods", pdb.Status)
	}
	wantContains(t, "evicted Pod", l.fails(t, "", "-n", "sub", "get", "pod", "r"), `pods "r" not found`)
}

func computedToken(t *testing.T, l *lapisProc) {
	wantContains(t, "create token of a missing ServiceAccount", l.fails(t, "", "-n", "sub", "create", "token", "nope"), `serviceaccounts "nope" not found`)
	wantContains(t, "create token --duration=1s", l.fails(t, "", "-n", "sub", "create", "token", "default", "--duration=1s"),
		`TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 1: may not specify a duration less than 10 minutes`)
	if token := strings.TrimSpace(l.must(t, "-n", "sub", "create", "token", "default")); strings.Count(token, ".") != 2 {
		t.Errorf("create token: %q, want a JWT", token)
	}
}

// wantStatus checks a response's code and, unless message is empty, its Status message.
func wantStatus(t *testing.T, what string, code int, body string, wantCode int, message string) {
	t.Helper()
	var status struct {
		Message string `json:"message"`
		Code    int    `json:"code"`
	}
	if err := json.Unmarshal([]byte(body), &status); err != nil || code != wantCode || status.Code != wantCode || (message != "" && status.Message != message) {
		t.Errorf("%s: %d %s\nwant %d with message %q", what, code, body, wantCode, message)
	}
}

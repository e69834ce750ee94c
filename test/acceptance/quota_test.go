package acceptance

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
)

// TestResourceQuota: a ResourceQuota gets its status (hard and used) as kube-controller-manager
// computes it, kube-apiserver's ResourceQuota admission refuses what exceeds it with kube's
// messages (taken from a kube-apiserver 1.37 with its kube-controller-manager), and used drops
// again as objects go or stop counting.
func TestResourceQuota(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.must(t, "create", "ns", "q")
	l.mustIn(t, `
apiVersion: v1
kind: ResourceQuota
metadata: {name: q1}
spec:
  hard: {count/configmaps: "2", configmaps: "3", pods: "2", requests.cpu: "1", services.nodeports: "1", count/deployments.apps: "1"}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: term}
spec:
  hard: {pods: "1", limits.cpu: "1"}
  scopes: [Terminating]
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: be}
spec:
  hard: {pods: "1"}
  scopes: [BestEffort]
`, "-n", "q", "apply", "-f", "-")

	// The steps run in order: each one's counts follow from what the ones before left in q.
	t.Run("status: hard is spec.hard, used counts what is there", func(t *testing.T) { quotaStatus(t, l) })
	quotaRefusals(t, l)
	t.Run("used follows objects created, changed and deleted", func(t *testing.T) { quotaUsedFollowsObjects(t, l) })
	t.Run("scopes and a LimitRange's defaults", func(t *testing.T) { quotaScopesAndLimitRange(t, l) })
	t.Run("a quota's new limits reach its status", func(t *testing.T) { quotaNewLimitsReachStatus(t, l) })
}

// eventuallyQuotaUsed waits for the controller to set the status.used of quota (in namespace
// q) to want: replenishment is asynchronous, as in kube.
func (l *lapisProc) eventuallyQuotaUsed(t *testing.T, quota, want string) {
	t.Helper()
	poll.Eventually(t, 10*time.Second, "status.used of "+quota, func() (bool, string) {
		got := l.must(t, "-n", "q", "get", "quota", quota, "-o", "jsonpath={.status.used}")
		return got == want, got
	})
}

// quotaPod is a Pod manifest whose one container requests and is limited to cpu (none when
// empty), with activeDeadlineSeconds when deadline is set.
func quotaPod(name, cpu, deadline string) string {
	spec := "containers: [{name: c, image: x}]"
	if cpu != "" {
		spec = "containers: [{name: c, image: x, resources: {requests: {cpu: " + cpu + "}, limits: {cpu: " + cpu + "}}}]"
	}
	if deadline != "" {
		spec = "activeDeadlineSeconds: " + deadline + "\n  " + spec
	}
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  " + spec + "\n"
}

func quotaStatus(t *testing.T, l *lapisProc) {
	// The namespace's kube-root-ca.crt counts, as in kube.
	l.eventuallyQuotaUsed(t, "q1", `{"configmaps":"1","count/configmaps":"1","count/deployments.apps":"0","pods":"0","requests.cpu":"0","services.nodeports":"0"}`)
	wantEqual(t, "status.hard", l.must(t, "-n", "q", "get", "quota", "q1", "-o", "jsonpath={.status.hard}"),
		`{"configmaps":"3","count/configmaps":"2","count/deployments.apps":"1","pods":"2","requests.cpu":"1","services.nodeports":"1"}`)
	// managedFields are ordered by time, to the second: compare the writers as a set.
	writers := strings.Fields(l.must(t, "-n", "q", "get", "quota", "q1", "--show-managed-fields", "-o",
		`jsonpath={range .metadata.managedFields[*]}{.manager}/{.subresource} {end}`))
	slices.Sort(writers)
	wantEqual(t, "status writer", strings.Join(writers, " "), "kube-controller-manager/status kubectl-client-side-apply/")
	l.eventuallyQuotaUsed(t, "term", `{"limits.cpu":"0","pods":"0"}`)
	l.eventuallyQuotaUsed(t, "be", `{"pods":"0"}`)
}

// quotaRefusals creates what each quota allows, then one more, which is refused: one subtest each.
func quotaRefusals(t *testing.T, l *lapisProc) {
	refused := []struct {
		name  string
		ok    [][]string // kubectl commands that succeed first
		stdin string
		args  []string
		want  string // kubectl's stderr, kube's message
	}{{
		name: "count/configmaps",
		ok:   [][]string{{"create", "configmap", "a"}},
		args: []string{"create", "configmap", "b"},
		want: `error: failed to create configmap: configmaps "b" is forbidden: exceeded quota: q1, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2`,
	}, {
		name: "count/deployments.apps",
		ok:   [][]string{{"create", "deployment", "d1", "--image=x"}},
		args: []string{"create", "deployment", "d2", "--image=x"},
		want: `error: failed to create deployment: deployments.apps "d2" is forbidden: exceeded quota: q1, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1`,
	}, {
		name: "services.nodeports",
		ok:   [][]string{{"create", "service", "nodeport", "s1", "--tcp=80"}},
		args: []string{"create", "service", "nodeport", "s2", "--tcp=80"},
		want: `error: failed to create NodePort service: services "s2" is forbidden: exceeded quota: q1, requested: services.nodeports=1, used: services.nodeports=1, limited: services.nodeports=1`,
	}, {
		name:  "a pod without the requests a quota limits",
		stdin: quotaPod("p0", "", ""),
		args:  []string{"create", "-f", "-"},
		want:  `Error from server (Forbidden): error when creating "STDIN": pods "p0" is forbidden: failed quota: q1: must specify requests.cpu for: c`,
	}, {
		name:  "requests.cpu",
		stdin: quotaPod("p2", "600m", ""),
		ok:    [][]string{{"create", "-f", "-"}}, // p1, below
		args:  []string{"create", "-f", "-"},
		want:  `Error from server (Forbidden): error when creating "STDIN": pods "p2" is forbidden: exceeded quota: q1, requested: requests.cpu=600m, used: requests.cpu=500m, limited: requests.cpu=1`,
	}}
	for _, tc := range refused {
		t.Run("exceeded: "+tc.name, func(t *testing.T) {
			for _, args := range tc.ok {
				stdin := ""
				if tc.stdin != "" {
					stdin = quotaPod("p1", "500m", "")
				}
				l.mustIn(t, stdin, append([]string{"-n", "q"}, args...)...)
			}
			wantEqual(t, "error", l.fails(t, tc.stdin, append([]string{"-n", "q"}, tc.args...)...), tc.want)
		})
	}
}

func quotaUsedFollowsObjects(t *testing.T, l *lapisProc) {
	l.eventuallyQuotaUsed(t, "q1", `{"configmaps":"2","count/configmaps":"2","count/deployments.apps":"1","pods":"1","requests.cpu":"500m","services.nodeports":"1"}`)
	l.must(t, "-n", "q", "delete", "configmap", "a")
	l.must(t, "-n", "q", "delete", "deployment", "d1")
	l.must(t, "-n", "q", "delete", "service", "s1")
	l.eventuallyQuotaUsed(t, "q1", `{"configmaps":"1","count/configmaps":"1","count/deployments.apps":"0","pods":"1","requests.cpu":"500m","services.nodeports":"0"}`)
	// A pod that has finished no longer counts (kube's update filter).
	l.must(t, "-n", "q", "patch", "pod", "p1", "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Succeeded"}}`)
	l.eventuallyQuotaUsed(t, "q1", `{"configmaps":"1","count/configmaps":"1","count/deployments.apps":"0","pods":"0","requests.cpu":"0","services.nodeports":"0"}`)
	l.must(t, "-n", "q", "create", "configmap", "b")
}

func quotaScopesAndLimitRange(t *testing.T, l *lapisProc) {
	l.must(t, "-n", "q", "delete", "quota", "q1")
	// Only pods with activeDeadlineSeconds are in the Terminating scope. (With several
	// quotas refusing, which one kube names depends on its informer's order.)
	wantEqual(t, "error", l.fails(t, quotaPod("t1", "", "30"), "-n", "q", "create", "-f", "-"),
		`Error from server (Forbidden): error when creating "STDIN": pods "t1" is forbidden: failed quota: term: must specify limits.cpu for: c`)
	// The LimitRange's defaults are what the pod requests (LimitRanger admits before
	// ResourceQuota): no longer BestEffort, and within Terminating's limits.cpu.
	l.mustIn(t, `
apiVersion: v1
kind: LimitRange
metadata: {name: lr}
spec:
  limits: [{type: Container, default: {cpu: 300m}, defaultRequest: {cpu: 300m}}]
`, "-n", "q", "apply", "-f", "-")
	l.mustIn(t, quotaPod("t2", "", "30"), "-n", "q", "create", "-f", "-")
	l.eventuallyQuotaUsed(t, "term", `{"limits.cpu":"300m","pods":"1"}`)
	l.eventuallyQuotaUsed(t, "be", `{"pods":"0"}`)
	wantEqual(t, "error", l.fails(t, quotaPod("t3", "", "30"), "-n", "q", "create", "-f", "-"),
		`Error from server (Forbidden): error when creating "STDIN": pods "t3" is forbidden: exceeded quota: term, requested: pods=1, used: pods=1, limited: pods=1`)
	l.must(t, "-n", "q", "delete", "limitrange", "lr")
	l.mustIn(t, quotaPod("be1", "", ""), "-n", "q", "create", "-f", "-")
	l.eventuallyQuotaUsed(t, "be", `{"pods":"1"}`)
	wantEqual(t, "error", l.fails(t, quotaPod("be2", "", ""), "-n", "q", "create", "-f", "-"),
		`Error from server (Forbidden): error when creating "STDIN": pods "be2" is forbidden: exceeded quota: be, requested: pods=1, used: pods=1, limited: pods=1`)
	l.must(t, "-n", "q", "delete", "pod", "be1", "t2")
	l.eventuallyQuotaUsed(t, "be", `{"pods":"0"}`)
	l.eventuallyQuotaUsed(t, "term", `{"limits.cpu":"0","pods":"0"}`)
}

func quotaNewLimitsReachStatus(t *testing.T, l *lapisProc) {
	l.must(t, "-n", "q", "patch", "quota", "be", "--type=merge", "-p", `{"spec":{"hard":{"pods":"5"}}}`)
	poll.Eventually(t, 10*time.Second, "status.hard", func() (bool, string) {
		got := l.must(t, "-n", "q", "get", "quota", "be", "-o", "jsonpath={.status.hard}")
		return strings.TrimSpace(got) == `{"pods":"5"}`, got
	})
}

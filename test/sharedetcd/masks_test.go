package sharedetcd

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The masks: what a comparison leaves out, and why. Nothing of a stored object is masked; the
// objects below are the running server's own, rewritten by whichever server runs.

// identityLabel marks an API server's identity Lease in kube-system, renewed every 10 s by the
// server it names (kube's apiserver lease controller; lapis's internal/apiserverid).
const identityLabel = "apiserver.kubernetes.io/identity"

// lapisLeaderLease is lapis's Lease for its singleton work (the controllers), renewed every
// few seconds while lapis runs: the counterpart of kube-controller-manager's leader Lease,
// which this test's kube-controller-manager does not take (--leader-elect=false, as the
// kube-reference script runs it).
const lapisLeaderLease = "lapis-controller-manager"

// serverOwn tells whether an object is one the running server rewrites by itself, so that its
// resourceVersion, renew times and holder depend on which server ran last and when:
//   - identity Leases (kube-system, label apiserver.kubernetes.io/identity);
//   - lapis's singleton-work Lease (kube-system/lapis-controller-manager);
//   - kube-system/extension-apiserver-authentication, whose CAs are each server's (kubeStartupWhy);
//   - the kubernetes Service's Endpoints and EndpointSlice (default/kubernetes): kube's lease
//     endpoint reconciler removes its address when it stops and the next server adds its own;
//     their addresses and ports are compared on their own (kubernetesEndpoints).
func serverOwn(r resource, md map[string]any) bool {
	name, _ := md["name"].(string)
	namespace, _ := md["namespace"].(string)
	switch {
	case r.name == "leases" && namespace == "kube-system":
		labels, _ := md["labels"].(map[string]any)
		return labels[identityLabel] != nil || name == lapisLeaderLease
	case (r.name == "endpoints" && r.group == "") || (r.name == "endpointslices" && r.group == "discovery.k8s.io"):
		return namespace == "default" && name == "kubernetes"
	case r.name == "configmaps" && r.group == "" && namespace == "kube-system":
		return name == "extension-apiserver-authentication" // kubeStartupWhy
	}
	return false
}

// kubernetesEndpoints is what is compared of the kubernetes Service's Endpoints and
// EndpointSlice: where they send clients, not who wrote them when.
func kubernetesEndpoints(r resource, obj map[string]any) map[string]any {
	if r.name == "endpoints" {
		return map[string]any{"subsets": obj["subsets"]}
	}
	return map[string]any{"addressType": obj["addressType"], "endpoints": obj["endpoints"], "ports": obj["ports"]}
}

// maskTable is a Table as compared: without its own resourceVersion (the etcd revision at the
// read, as a list's), with the cells of its Age column emptied (relative to the read's time),
// and those past its column definitions (kube's IPAddress printer adds an age cell without a
// column), and without the rows of server-own objects (serverOwn).
func maskTable(r resource, table map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range table {
		out[k] = v
	}
	if md, ok := table["metadata"].(map[string]any); ok {
		out["metadata"] = without(md, "resourceVersion")
	}
	age := -1
	cols, _ := table["columnDefinitions"].([]any)
	for i, c := range cols {
		if col, _ := c.(map[string]any); col["name"] == "Age" {
			age = i
		}
	}
	var rows []any
	list, _ := table["rows"].([]any)
	for _, row := range list {
		rm, _ := row.(map[string]any)
		obj, _ := rm["object"].(map[string]any)
		if md, _ := obj["metadata"].(map[string]any); md != nil && serverOwn(r, md) {
			continue
		}
		rows = append(rows, maskAge(rm, age, len(cols)))
	}
	out["rows"] = rows
	return out
}

// maskAge is a Table row with the cell at age (none when age < 0) and those from columns on
// emptied.
func maskAge(row map[string]any, age, columns int) map[string]any {
	cells, _ := row["cells"].([]any)
	masked := append([]any(nil), cells...)
	for i := range masked {
		if i == age || i >= columns {
			masked[i] = "(age)"
		}
	}
	out := without(row)
	out["cells"] = masked
	return out
}

// without is a shallow copy of m without keys.
func without(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// objectKey names an object in messages and maps: namespace/name, or name.
func objectKey(md map[string]any) string {
	name, _ := md["name"].(string)
	if namespace, _ := md["namespace"].(string); namespace != "" {
		return namespace + "/" + name
	}
	return name
}

// shorten is v as JSON, cut to n characters.
func shorten(v any, n int) string {
	s := fmt.Sprintf("%v", v)
	if b, err := json.Marshal(v); err == nil {
		s = string(b)
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return strings.ReplaceAll(s, "\n", `\n`)
}

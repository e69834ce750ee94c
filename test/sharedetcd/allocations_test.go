package sharedetcd

import (
	"net/http"
	"strings"
	"testing"
)

// allocationProbes are Service creations, run dry (dryRun=All: nothing is kept), whose answer
// depends on what the allocators of cluster IPs and node ports hold: a server reading another's
// etcd must find the other's allocations (kube 1.37 keeps cluster IPs as IPAddress objects and
// node ports in a bitmap under /registry/services/nodeports).
var allocationProbes = []string{
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":"sd-probe-ip"},"spec":{"clusterIP":"10.96.100.10","ports":[{"port":80}]}}`,
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":"sd-probe-ip2"},"spec":{"clusterIP":"10.96.100.11","ports":[{"port":80}]}}`,
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":"sd-probe-port"},"spec":{"type":"NodePort","clusterIP":"10.96.100.20","ports":[{"port":80,"nodePort":30080}]}}`,
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":"sd-probe-free"},"spec":{"clusterIP":"10.96.100.21","ports":[{"port":80}]}}`,
}

// probeAllocations sends allocationProbes to s and returns its answers as compared: the code,
// and the whole Status of a refusal or what was allocated on success.
func probeAllocations(t *testing.T, s *server) []any {
	t.Helper()
	var answers []any
	for _, body := range allocationProbes {
		a := s.do(t, "POST", "/api/v1/namespaces/sd/services?dryRun=All&fieldManager="+fieldOwner, jsonType, "", []byte(body))
		o, _ := decode(a.body).(map[string]any)
		if a.code != http.StatusCreated {
			answers = append(answers, map[string]any{"code": a.code, "status": o})
			continue
		}
		spec, _ := o["spec"].(map[string]any)
		answers = append(answers, map[string]any{"code": a.code, "clusterIPs": spec["clusterIPs"], "ports": spec["ports"]})
	}
	return answers
}

// compareAllocations fails t where the second server's answers to allocationProbes differ from
// the first's on the same etcd.
func compareAllocations(t *testing.T, want, got []any, first, second string) {
	t.Helper()
	for i, body := range allocationProbes {
		if d := diff(want[i], got[i], 10); len(d) > 0 {
			t.Errorf("POST /api/v1/namespaces/sd/services?dryRun=All %s: answers differ (%s → %s):\n\t%s", body, first, second, strings.Join(d, "\n\t"))
		}
	}
}

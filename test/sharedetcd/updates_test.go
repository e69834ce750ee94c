package sharedetcd

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// change is one write of the second server's round of updates and deletes.
type change struct {
	method, path, contentType, body string
}

// corpusUpdates change labels, spec fields and status, apply as a third field manager, and
// delete objects: plain ones, a Service (its cluster IP and node ports go back to the
// allocators), an unscheduled Pod (gone at once), custom resources, and two objects with a
// finalizer, which must end terminating, not gone.
var corpusUpdates = []change{
	{"PATCH", "/api/v1/namespaces/sd/configmaps/sd-config", mergeType, `{"metadata":{"labels":{"updated":"yes"}},"data":{"a":"2"}}`},
	{"PATCH", "/apis/apps/v1/namespaces/sd/deployments/sd-deploy", mergeType, `{"spec":{"replicas":3}}`},
	{"PATCH", "/api/v1/namespaces/sd/services/sd-clusterip", "application/strategic-merge-patch+json", `{"metadata":{"labels":{"updated":"yes"}},"spec":{"ports":[{"name":"https","port":443,"targetPort":8443}]}}`},
	{"PATCH", "/apis/sd.example.com/v2/namespaces/sd/widgets/sd-widget-v1", mergeType, `{"spec":{"size":10}}`},
	{"PATCH", "/apis/sd.example.com/v1/namespaces/sd/widgets/sd-widget-v1/status", mergeType, `{"status":{"ready":true}}`},
	{"PATCH", "/api/v1/nodes/sd-node/status", mergeType, `{"status":{"capacity":{"cpu":"4","pods":"110"}}}`},
	{"PATCH", "/apis/sd.example.com/v2/namespaces/sd/widgets/sd-widget-applied?fieldManager=sd-gamma", applyType, `
apiVersion: sd.example.com/v2
kind: Widget
metadata: {name: sd-widget-applied, namespace: sd, labels: {gamma: "yes"}}`},
	{"PATCH", "/api/v1/namespaces/sd/configmaps/sd-applied?fieldManager=sd-gamma", applyType, `
apiVersion: v1
kind: ConfigMap
metadata: {name: sd-applied, namespace: sd}
data: {g: "3"}`},
	{"DELETE", "/api/v1/namespaces/sd/secrets/sd-secret", "", ""},
	{"DELETE", "/api/v1/namespaces/sd/services/sd-nodeport", "", ""},
	{"DELETE", "/api/v1/namespaces/sd/pods/sd-pod", "", ""},
	{"DELETE", "/apis/sd.example.com/v1/namespaces/sd/widgets/sd-widget-v2", "", ""},
	{"DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterroles/sd-clusterrole", "", ""},
	{"DELETE", "/api/v1/namespaces/sd/configmaps/sd-finalized", "", ""},
	{"DELETE", "/apis/sd.example.com/v2/namespaces/sd/widgets/sd-widget-finalized", "", ""},
	{"DELETE", "/api/v1/namespaces/sd/configmaps/sd-owner?propagationPolicy=Background", "", ""},
}

// terminating are the objects with a finalizer corpusUpdates deletes.
var terminating = []string{
	"/api/v1/namespaces/sd/configmaps/sd-finalized",
	"/apis/sd.example.com/v2/namespaces/sd/widgets/sd-widget-finalized",
}

// updateCorpus sends corpusUpdates through s and waits for the garbage collector to delete
// what sd-owner owned (sd-owned) and to drop it from what it co-owned (sd-owned-secret).
func updateCorpus(t *testing.T, s *server, e *etcdServer) {
	t.Helper()
	for _, c := range corpusUpdates {
		path := c.path
		if c.contentType != applyType {
			path += sep(path) + "fieldManager=" + fieldOwner
		}
		if a := s.do(t, c.method, path, c.contentType, "", []byte(c.body)); a.code != http.StatusOK {
			t.Errorf("%s: %s %s: %d: %s", s.name, c.method, c.path, a.code, a.body)
		}
	}
	waitFor(t, s, 30*time.Second, "the garbage collector deleted sd-owned and unlinked sd-owned-secret", func() bool {
		var secret struct {
			Metadata struct{ OwnerReferences []any }
		}
		gone := s.do(t, "GET", "/api/v1/namespaces/sd/configmaps/sd-owned", "", "", nil).code == http.StatusNotFound
		a := s.do(t, "GET", "/api/v1/namespaces/sd/secrets/sd-owned-secret", "", "", nil)
		return gone && json.Unmarshal(a.body, &secret) == nil && len(secret.Metadata.OwnerReferences) == 1
	})
	quiet(t, e)
}

// checkTerminating fails t unless each object of terminating is there, being deleted, its
// finalizer kept.
func checkTerminating(t *testing.T, s *server) {
	t.Helper()
	for _, path := range terminating {
		var o struct {
			Metadata struct {
				DeletionTimestamp string
				Finalizers        []string
			}
		}
		a := s.do(t, "GET", path, "", "", nil)
		if a.code != http.StatusOK || json.Unmarshal(a.body, &o) != nil {
			t.Errorf("%s: GET %s: %d, want the object, terminating: %s", s.name, path, a.code, a.body)
			continue
		}
		if o.Metadata.DeletionTimestamp == "" || len(o.Metadata.Finalizers) != 1 {
			t.Errorf("%s: %s: deletionTimestamp %q, finalizers %q: want terminating with its finalizer", s.name, path, o.Metadata.DeletionTimestamp, o.Metadata.Finalizers)
		}
	}
}

// sep is what joins a query parameter to path.
func sep(path string) string {
	if strings.Contains(path, "?") {
		return "&"
	}
	return "?"
}

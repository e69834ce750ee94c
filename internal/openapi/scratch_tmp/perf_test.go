package scratch

import (
	"net/http"
	"net/http/httptest"
	"io"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/openapi"
)

func TestPerf(t *testing.T) {
	cat := catalog.New()
	add := func(g, v string, ns bool, names ...string) {
		for i := 0; i < len(names); i += 2 {
			cat.AddBuiltin(&catalog.Resource{GroupVersion: schema.GroupVersion{Group: g, Version: v}, Name: names[i], Kind: names[i+1], Namespaced: ns, HasStatus: true})
		}
	}
	add("", "v1", true, "pods", "Pod", "services", "Service", "configmaps", "ConfigMap", "secrets", "Secret", "events", "Event", "serviceaccounts", "ServiceAccount", "endpoints", "Endpoints", "persistentvolumeclaims", "PersistentVolumeClaim", "limitranges", "LimitRange", "resourcequotas", "ResourceQuota", "replicationcontrollers", "ReplicationController")
	add("", "v1", false, "namespaces", "Namespace", "nodes", "Node", "persistentvolumes", "PersistentVolume")
	add("apps", "v1", true, "deployments", "Deployment", "replicasets", "ReplicaSet", "statefulsets", "StatefulSet", "daemonsets", "DaemonSet", "controllerrevisions", "ControllerRevision")
	add("batch", "v1", true, "jobs", "Job", "cronjobs", "CronJob")
	add("coordination.k8s.io", "v1", true, "leases", "Lease")
	add("events.k8s.io", "v1", true, "events", "Event")
	add("rbac.authorization.k8s.io", "v1", true, "roles", "Role", "rolebindings", "RoleBinding")
	add("rbac.authorization.k8s.io", "v1", false, "clusterroles", "ClusterRole", "clusterrolebindings", "ClusterRoleBinding")
	add("networking.k8s.io", "v1", true, "ingresses", "Ingress", "networkpolicies", "NetworkPolicy")
	add("policy", "v1", true, "poddisruptionbudgets", "PodDisruptionBudget")
	add("autoscaling", "v2", true, "horizontalpodautoscalers", "HorizontalPodAutoscaler")
	add("discovery.k8s.io", "v1", true, "endpointslices", "EndpointSlice")
	add("scheduling.k8s.io", "v1", false, "priorityclasses", "PriorityClass")
	add("storage.k8s.io", "v1", false, "storageclasses", "StorageClass", "csidrivers", "CSIDriver")
	add("apiextensions.k8s.io", "v1", false, "customresourcedefinitions", "CustomResourceDefinition")
	srv := httptest.NewServer(openapi.NewService(cat))
	defer srv.Close()
	for _, u := range []string{"/openapi/v3", "/openapi/v3/api/v1", "/openapi/v2", "/openapi/v2#pb", "/openapi/v2#pb"} {
		start := time.Now()
		req, _ := http.NewRequest("GET", srv.URL+u, nil)
		if u == "/openapi/v2#pb" {
			req.Header.Set("Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
		}
		resp, _ := http.DefaultClient.Do(req)
		n, _ := io.Copy(io.Discard, resp.Body)
		t.Logf("%s %d %d bytes %v", u, resp.StatusCode, n, time.Since(start))
	}
}

package objects

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkDeploymentApply is the write path of a server-side apply of a Deployment in process
// (no HTTP): two managers alternate, the chart's changing the image each time, as
// test/bench's BenchmarkDeploymentApply does over the wire.
func BenchmarkDeploymentApply(b *testing.B) {
	s := newTestService(b)
	ctx := context.Background()
	r := s.mustResource(b, "apps", "v1", "deployments")
	apply := func(i int, manager string, body string) {
		b.Helper()
		var config unstructured.Unstructured
		if err := json.Unmarshal([]byte(body), &config.Object); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Apply(ctx, r, "default", "d", &config, ApplyOptions{WriteOptions: WriteOptions{Manager: manager}, Force: true}); err != nil {
			b.Fatalf("apply %d as %s: %v", i, manager, err)
		}
	}
	apply(0, "chart", benchDeployment(0))
	b.ReportAllocs()
	b.ResetTimer()
	start := processCPU()
	for i := 1; i <= b.N; i++ {
		if i%2 == 0 {
			apply(i, "chart", benchDeployment(i))
		} else {
			apply(i, "scaler", fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":%d}}`, i%7+3))
		}
	}
	// CPU of the whole process (GC and the embedded etcd included): on a shared machine it
	// moves less than ns/op with the load.
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}

// processCPU is the CPU time the process has used, user and system, in nanoseconds.
func processCPU() int64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return u.Utime.Nano() + u.Stime.Nano()
}

// benchDeployment is a chart's Deployment: two containers with ports, environment, resources
// and probes; gen varies the image.
func benchDeployment(gen int) string {
	return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","labels":{"app":"web","tier":"bench"}},
"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[
{"name":"app","image":"registry.example.com/app:1.%d","args":["--listen=:8080","--log-level=info"],
 "ports":[{"name":"http","containerPort":8080},{"name":"metrics","containerPort":9090}],
 "env":[{"name":"MODE","value":"production"},{"name":"REGION","value":"eu-1"}],
 "resources":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"memory":"256Mi"}},
 "livenessProbe":{"httpGet":{"path":"/healthz","port":"http"}},"readinessProbe":{"httpGet":{"path":"/healthz","port":"http"}}},
{"name":"proxy","image":"registry.example.com/proxy:2.4","ports":[{"name":"https","containerPort":8443}],
 "resources":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"memory":"256Mi"}}}]}}}}`, gen)
}

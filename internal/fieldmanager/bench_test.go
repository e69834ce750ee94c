package fieldmanager_test

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/lapis-dev/lapis/internal/objects"
)

// BenchmarkApply measures a server-side apply through the whole pipeline (no HTTP): merge,
// field tracking, normalization, defaulting, validation and the store write.
func BenchmarkApply(b *testing.B) {
	t := &testing.T{}
	f := newFixture(t)
	r := f.resource(t, fixtureResources["marked"], "")
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("w-%d", i%200)
		cfg := &unstructured.Unstructured{}
		_ = yaml.Unmarshal([]byte(fmt.Sprintf(`{apiVersion: %s, kind: %s, metadata: {name: %s, namespace: default}, spec: {replicas: %d, ports: [{name: http, port: %d}]}}`,
			r.GroupVersion, r.Kind, name, i, i)), &cfg.Object)
		if _, err := f.svc.Apply(ctx, r, "default", name, cfg, objects.ApplyOptions{WriteOptions: objects.WriteOptions{Manager: "bench"}, Force: true}); err != nil {
			b.Fatal(err)
		}
	}
}

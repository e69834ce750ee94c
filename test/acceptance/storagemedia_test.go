package acceptance

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"
)

// TestProtobufStorage: with --storage-media-type application/vnd.kubernetes.protobuf lapis
// writes built-in objects as kube-apiserver does by default (Protobuf in kube's envelope) and
// custom resources as JSON, and serves both through every verb as with its own JSON.
func TestProtobufStorage(t *testing.T) {
	t.Parallel()
	endpoint := fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	l := startLapis(t, "--embedded-etcd-listen", endpoint, "--storage-media-type", "application/vnd.kubernetes.protobuf")
	l.must(t, "create", "ns", "pb")
	l.applyCRD(t, widgetCRD, "widgets.acme.example.com")
	l.must(t, "create", "deployment", "web", "-n", "pb", "--image=nginx")
	l.must(t, "create", "configmap", "c", "-n", "pb", "--from-literal=a=b")
	l.mustIn(t, "apiVersion: acme.example.com/v1\nkind: Widget\nmetadata: {name: w1, namespace: pb}\nspec: {size: 2}\n", "create", "-f", "-")

	c := l.etcdClient(t, endpoint)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for key, protobuf := range map[string]bool{
		"/registry/deployments/pb/web":             true,
		"/registry/configmaps/pb/c":                true,
		"/registry/namespaces/pb":                  true,
		"/registry/acme.example.com/widgets/pb/w1": false,
	} {
		resp, err := c.Get(ctx, key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("%s: %v", key, err)
		}
		if got := bytes.HasPrefix(resp.Kvs[0].Value, []byte("k8s\x00")); got != protobuf {
			t.Errorf("%s stored as Protobuf: %v, want %v (starts %q)", key, got, protobuf, resp.Kvs[0].Value[:8])
		}
	}

	// Every verb reads and writes through it.
	l.must(t, "label", "deployment", "web", "-n", "pb", "tier=front")
	l.must(t, "scale", "deployment", "web", "-n", "pb", "--replicas=3")
	l.mustIn(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: pb}\ndata: {a: z}\n", "apply", "--server-side", "--force-conflicts", "-f", "-")
	wantEqual(t, "deployment", l.must(t, "get", "deployment", "web", "-n", "pb", "-o", "jsonpath={.metadata.labels.tier} {.spec.replicas}"), "front 3")
	wantEqual(t, "configmap", l.must(t, "get", "configmap", "c", "-n", "pb", "-o", "jsonpath={.data.a}"), "z")
	wantEqual(t, "list", l.must(t, "get", "deployments,configmaps,widgets", "-n", "pb", "-o", "name"),
		"deployment.apps/web\nconfigmap/c\nconfigmap/kube-root-ca.crt\nwidget.acme.example.com/w1")
	c.Close()
	l.Restart(t)
	wantEqual(t, "after a restart", l.must(t, "get", "deployment", "web", "-n", "pb", "-o", "jsonpath={.spec.replicas}"), "3")
	l.must(t, "delete", "deployment", "web", "-n", "pb")
}

package allocate

import (
	"context"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/objects/objectstest"
)

func (f *fixture) update(name string, mutate func(u *unstructured.Unstructured)) (*unstructured.Unstructured, error) {
	res, err := f.svc.Update(f.ctx, f.services, "ns", name, func(live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		out := live.DeepCopy()
		mutate(out)
		return out, nil
	}, objects.WriteOptions{})
	return res.Object, err
}

func (f *fixture) delete(name string) {
	if _, err := f.svc.Delete(f.ctx, f.services, "ns", name, objects.DeleteOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// TestReleased: what a Service no longer holds, after a delete, a type change or a failed write,
// can be taken again; what it still holds cannot.
func TestReleased(t *testing.T) {
	const requested = "spec: {clusterIP: 10.0.0.20, type: NodePort, ports: [{port: 80, nodePort: 30100}]}"
	for _, tc := range []struct {
		name    string
		release func(f *fixture)
		freed   bool // the IP and the port can be taken again
	}{{
		name:    "nothing done: both held",
		release: func(*fixture) {},
	}, {
		name:    "deleted",
		release: func(f *fixture) { f.delete("s") },
		freed:   true,
	}, {
		name: "changed to ExternalName",
		release: func(f *fixture) {
			if _, err := f.update("s", func(u *unstructured.Unstructured) {
				spec := u.Object["spec"].(map[string]any)
				spec["type"], spec["externalName"] = "ExternalName", "example.com"
				delete(spec, "clusterIP")
				delete(spec, "clusterIPs")
				spec["ports"] = []any{map[string]any{"port": int64(80)}}
			}); err != nil {
				f.t.Fatal(err)
			}
		},
		freed: true,
	}, {
		name: "dry-run delete-like update: dry run keeps both",
		release: func(f *fixture) {
			obj, _ := f.svc.Get(f.ctx, f.services, "ns", "s")
			spec := obj.Object["spec"].(map[string]any)
			spec["type"], spec["externalName"] = "ExternalName", "example.com"
			delete(spec, "clusterIP")
			delete(spec, "clusterIPs")
			if _, err := f.svc.Update(f.ctx, f.services, "ns", "s", func(*unstructured.Unstructured) (*unstructured.Unstructured, error) { return obj, nil }, objects.WriteOptions{DryRun: true}); err != nil {
				f.t.Fatal(err)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if _, err := f.create("metadata: {name: s}\n"+requested, false); err != nil {
				t.Fatal(err)
			}
			tc.release(f)
			_, err := f.create("metadata: {name: again}\n"+requested, false)
			if tc.freed && err != nil {
				t.Fatalf("not freed: %v", err)
			}
			if !tc.freed && !apierrors.IsInvalid(err) {
				t.Fatalf("taken twice: %v", err)
			}
		})
	}
}

// TestFailedWriteUndoes: a create that fails after allocating (the name exists) gives back
// what it took, as kube's FinishFunc does.
func TestFailedWriteUndoes(t *testing.T) {
	f := newFixture(t)
	if _, err := f.create("metadata: {name: s}\nspec: {ports: [{port: 80}]}", false); err != nil {
		t.Fatal(err)
	}
	_, err := f.create("metadata: {name: s}\nspec: {clusterIP: 10.0.0.30, type: NodePort, ports: [{port: 80, nodePort: 30200}]}", false)
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("got %v", err)
	}
	if _, ok := f.ipAddress("10.0.0.30"); ok {
		t.Error("the IPAddress of a failed create was kept")
	}
	if _, err := f.create("metadata: {name: t}\nspec: {clusterIP: 10.0.0.30, type: NodePort, ports: [{port: 80, nodePort: 30200}]}", false); err != nil {
		t.Errorf("the failed create's IP or port still taken: %v", err)
	}
}

// TestRestart: a restarted lapis neither hands out what stored Services hold nor loses an
// IPAddress a Service's IP lacks (repair creates it).
func TestRestart(t *testing.T) {
	f := newFixture(t)
	u, err := f.create("metadata: {name: s}\nspec: {type: NodePort, ports: [{port: 80}]}", false)
	if err != nil {
		t.Fatal(err)
	}
	ip, port := str(u, "spec", "clusterIP"), nodePort(u, 0)
	if _, err := f.svc.Delete(f.ctx, f.ips, "", ip, objects.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.start() // a second Start on the same storage: as after a restart
	if _, ok := f.ipAddress(ip); !ok {
		t.Errorf("repair did not recreate IPAddress %s", ip)
	}
	_, err = f.create("metadata: {name: t}\nspec: {type: NodePort, ports: [{port: 80, nodePort: "+strconv.FormatInt(port, 10)+"}]}", false)
	if !apierrors.IsInvalid(err) {
		t.Errorf("node port %d handed out twice after a restart: %v", port, err)
	}
}

// TestRangeStoreShared: two lapis sharing one etcd never hand out the same node port.
func TestRangeStoreShared(t *testing.T) {
	svc, _ := objectstest.NewService(t)
	ctx := context.Background()
	a := newRangeStore(ctx, svc.Store(), svc.Keys().Under(nodePortsKey), 5, "30000-30004", 0)
	b := newRangeStore(ctx, svc.Store(), svc.Keys().Under(nodePortsKey), 5, "30000-30004", 0)
	seen := map[int]bool{}
	for i := 0; i < 5; i++ {
		s := a
		if i%2 == 1 {
			s = b
		}
		offset, ok, err := s.AllocateNext()
		if err != nil || !ok || seen[offset] {
			t.Fatalf("allocation %d: offset %d ok %v err %v (seen %v)", i, offset, ok, err, seen)
		}
		seen[offset] = true
	}
	if _, ok, _ := a.AllocateNext(); ok {
		t.Error("a full range allocated once more")
	}
	if err := b.Release(2); err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Allocate(2); !ok || err != nil {
		t.Errorf("a port released by the other lapis: ok %v err %v", ok, err)
	}
}

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct{ ips, ports, err string }{
		{"", "", ""},
		{"10.96.0.0/16,fd00::/108", "30000-30100", ""},
		{"10.96.0.0/16,10.97.0.0/16", "", "--service-cluster-ip-range[0] and --service-cluster-ip-range[1] must be of different IP family"},
		{"10.0.0.0/24,fd00::/108,10.1.0.0/24", "", "--service-cluster-ip-range must not contain more than two entries"},
		{"nonsense", "", `--service-cluster-ip-range "nonsense": invalid CIDR address: nonsense`},
		{"fd00::/48", "", `--service-cluster-ip-range "fd00::/48": fd00::/48 leaves no usable service addresses (IPv6 prefixes must be /64 or longer)`},
		{"", "3-1", `--service-node-port-range "3-1": end port cannot be less than start port: 3-1`},
	} {
		_, err := ParseConfig(tc.ips, tc.ports)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.err {
			t.Errorf("ParseConfig(%q, %q): got %q, want %q", tc.ips, tc.ports, got, tc.err)
		}
	}
}

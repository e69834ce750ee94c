package allocate

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/objects/objectstest"
)

type fixture struct {
	t        *testing.T
	ctx      context.Context
	svc      *objects.Service
	services *catalog.Resource
	ips      *catalog.Resource
	cfg      Config
}

// newFixture starts allocation for the default ranges (10.0.0.0/24, 30000-32767) on a fresh store.
func newFixture(t *testing.T) *fixture {
	svc, cat := objectstest.NewService(t, "default", "ns")
	cfg, err := ParseConfig("", "")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, svc: svc, cfg: cfg}
	f.services, _ = cat.Lookup(catalog.ServicesGVR)
	f.ips, _ = cat.Lookup(ipAddressesGVR)
	f.start()
	return f
}

// start runs Start as a (re)started lapis does, on the fixture's storage.
func (f *fixture) start() {
	ctx, cancel := context.WithCancel(context.Background())
	f.t.Cleanup(cancel)
	f.ctx = ctx
	if _, err := Start(ctx, f.svc, f.cfg); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) create(doc string, dryRun bool) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte("apiVersion: v1\nkind: Service\n"+doc), &obj.Object); err != nil {
		f.t.Fatal(err)
	}
	res, err := f.svc.Create(f.ctx, f.services, "ns", obj, objects.WriteOptions{DryRun: dryRun})
	return res.Object, err
}

func (f *fixture) ipAddress(ip string) (*unstructured.Unstructured, bool) {
	u, err := f.svc.Get(f.ctx, f.ips, "", ip)
	return u, err == nil
}

func str(u *unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	b, _ := yaml.Marshal(v)
	return strings.TrimSpace(string(b))
}

func nodePort(u *unstructured.Unstructured, i int) int64 {
	ports, _, _ := unstructured.NestedSlice(u.Object, "spec", "ports")
	p, _ := ports[i].(map[string]any)["nodePort"].(int64)
	return p
}

func TestCreateAsKube(t *testing.T) {
	f := newFixture(t)
	if _, err := f.create("metadata: {name: taken}\nspec: {clusterIP: 10.0.0.10, type: NodePort, ports: [{port: 80, nodePort: 30080}]}", false); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, doc string
		dryRun    bool
		err       string // the API error's message; empty: created
		check     func(t *testing.T, u *unstructured.Unstructured)
	}{{
		name: "ClusterIP gets an IP of the range, held by an IPAddress",
		doc:  "metadata: {name: a}\nspec: {ports: [{port: 80}]}",
		check: func(t *testing.T, u *unstructured.Unstructured) {
			ip := str(u, "spec", "clusterIP")
			if !strings.HasPrefix(ip, "10.0.0.") || str(u, "spec", "clusterIPs") != "- "+ip {
				t.Errorf("clusterIP %s, clusterIPs %s", ip, str(u, "spec", "clusterIPs"))
			}
			wantEqual(t, "ipFamilyPolicy", str(u, "spec", "ipFamilyPolicy"), "SingleStack")
			wantEqual(t, "ipFamilies", str(u, "spec", "ipFamilies"), "- IPv4")
			addr, ok := f.ipAddress(ip)
			if !ok {
				t.Fatalf("no IPAddress %s", ip)
			}
			wantEqual(t, "parentRef", str(addr, "spec", "parentRef"), "name: a\nnamespace: ns\nresource: services")
			wantEqual(t, "labels", str(addr, "metadata", "labels"), "ipaddress.kubernetes.io/ip-family: IPv4\nipaddress.kubernetes.io/managed-by: ipallocator.k8s.io")
		},
	}, {
		name: "headless gets no IP; without selector RequireDualStack with both families",
		doc:  "metadata: {name: h}\nspec: {clusterIP: None, ports: [{port: 80}]}",
		check: func(t *testing.T, u *unstructured.Unstructured) {
			wantEqual(t, "clusterIPs", str(u, "spec", "clusterIPs"), "- None")
			wantEqual(t, "ipFamilyPolicy", str(u, "spec", "ipFamilyPolicy"), "RequireDualStack")
			wantEqual(t, "ipFamilies", str(u, "spec", "ipFamilies"), "- IPv4\n- IPv6")
		},
	}, {
		name: "ExternalName gets nothing",
		doc:  "metadata: {name: e}\nspec: {type: ExternalName, externalName: example.com}",
		check: func(t *testing.T, u *unstructured.Unstructured) {
			wantEqual(t, "clusterIP", str(u, "spec", "clusterIP"), "null")
			wantEqual(t, "ipFamilyPolicy", str(u, "spec", "ipFamilyPolicy"), "null")
		},
	}, {
		name: "NodePort ports and a LoadBalancer's health check port come from the range",
		doc:  "metadata: {name: lb}\nspec: {type: LoadBalancer, externalTrafficPolicy: Local, ports: [{port: 80}]}",
		check: func(t *testing.T, u *unstructured.Unstructured) {
			hc, _, _ := unstructured.NestedInt64(u.Object, "spec", "healthCheckNodePort")
			if p := nodePort(u, 0); p < 30000 || p > 32767 || hc < 30000 || hc > 32767 || hc == p {
				t.Errorf("nodePort %d, healthCheckNodePort %d", p, hc)
			}
		},
	}, {
		name: "allocateLoadBalancerNodePorts false: no node port",
		doc:  "metadata: {name: lbn}\nspec: {type: LoadBalancer, allocateLoadBalancerNodePorts: false, ports: [{port: 80}]}",
		check: func(t *testing.T, u *unstructured.Unstructured) {
			if p := nodePort(u, 0); p != 0 {
				t.Errorf("nodePort %d", p)
			}
		},
	}, {
		name: "a taken cluster IP",
		doc:  "metadata: {name: t1}\nspec: {clusterIP: 10.0.0.10, ports: [{port: 80}]}",
		err:  `Service "t1" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.10"]: failed to allocate IP 10.0.0.10: provided IP is already allocated`,
	}, {
		name: "a cluster IP out of range",
		doc:  "metadata: {name: t2}\nspec: {clusterIP: 10.0.1.10, ports: [{port: 80}]}",
		err:  `Service "t2" is invalid: spec.clusterIPs: Invalid value: ["10.0.1.10"]: failed to allocate IP 10.0.1.10: the provided network does not match the current range`,
	}, {
		name: "a taken node port",
		doc:  "metadata: {name: t3}\nspec: {type: NodePort, ports: [{port: 80, nodePort: 30080}]}",
		err:  `Service "t3" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated`,
	}, {
		name: "a node port out of range",
		doc:  "metadata: {name: t4}\nspec: {type: NodePort, ports: [{port: 80, nodePort: 40000}]}",
		err:  `Service "t4" is invalid: spec.ports[0].nodePort: Invalid value: 40000: provided port is not in the valid range. The range of valid ports is 30000-32767`,
	}, {
		name: "dual-stack on a single-stack cluster",
		doc:  "metadata: {name: t5}\nspec: {ipFamilyPolicy: RequireDualStack, ports: [{port: 80}]}",
		err:  `Service "t5" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services`,
	}, {
		name:   "dry run: kube's placeholders, nothing kept",
		doc:    "metadata: {name: dry}\nspec: {type: NodePort, ports: [{port: 80}]}",
		dryRun: true,
		check: func(t *testing.T, u *unstructured.Unstructured) {
			wantEqual(t, "clusterIP", str(u, "spec", "clusterIP"), "10.0.0.0")
			if p := nodePort(u, 0); p != 32769 {
				t.Errorf("nodePort %d, want kube's dry-run 32769", p)
			}
			if _, ok := f.ipAddress("10.0.0.0"); ok {
				t.Error("dry run kept an IPAddress")
			}
		},
	}, {
		name:   "dry run still refuses a taken node port",
		doc:    "metadata: {name: dry2}\nspec: {type: NodePort, ports: [{port: 80, nodePort: 30080}]}",
		dryRun: true,
		err:    `Service "dry2" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := f.create(tc.doc, tc.dryRun)
			if tc.err != "" {
				if !apierrors.IsInvalid(err) || err.Error() != tc.err {
					t.Fatalf("got %v, want 422 %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, u)
		})
	}
}

func wantEqual(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

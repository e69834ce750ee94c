package acceptance

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
)

// svcDoc is a Service in namespace svc with the given spec (YAML flow style).
func svcDoc(name, spec string) string {
	return "apiVersion: v1\nkind: Service\nmetadata: {name: " + name + ", namespace: svc}\nspec: " + spec + "\n"
}

// TestServiceAllocation: kube-apiserver 1.37's answers (checked on it) to Services' cluster IPs
// and node ports through kubectl — allocation, conflicts, dry run, type changes — their
// IPAddress objects, the default ServiceCIDR and the kubernetes Service; what a deleted Service
// held is free again, and nothing is handed out twice after a restart.
func TestServiceAllocation(t *testing.T) {
	l := startLapis(t, "--service-cluster-ip-range", "10.96.0.0/16", "--service-node-port-range", "30000-30099")
	l.must(t, "create", "namespace", "svc")

	// The default ServiceCIDR and the kubernetes Service, its Endpoints and EndpointSlice.
	wantEqual(t, "servicecidr", l.must(t, "get", "servicecidr", "kubernetes", "-o",
		`jsonpath={.spec.cidrs} {.status.conditions[0].type}={.status.conditions[0].status}`), `["10.96.0.0/16"] Ready=True`)
	port := l.server[strings.LastIndex(l.server, ":")+1:]
	poll.Eventually(t, 10*time.Second, "the kubernetes Service and its endpoints", func() (bool, string) {
		out, errOut, _ := l.kubectl("-n", "default", "get", "service/kubernetes", "endpoints/kubernetes", "endpointslice/kubernetes", "-o",
			`jsonpath={.items[0].spec.clusterIP} {.items[0].spec.ports[0].port}->{.items[0].spec.ports[0].targetPort} {.items[1].subsets[0].ports[0].port} {.items[2].ports[0].port} {.items[2].metadata.labels.kubernetes\.io/service-name}`)
		return out == "10.96.0.1 443->"+port+" "+port+" "+port+" kubernetes", out + errOut
	})
	wantEqual(t, "the kubernetes Service's IPAddress", l.must(t, "get", "ipaddress", "10.96.0.1", "-o", "jsonpath={.spec.parentRef}"),
		`{"name":"kubernetes","namespace":"default","resource":"services"}`)

	created := l.mustIn(t, svcDoc("cip", "{selector: {app: a}, ports: [{port: 80}]}")+"---\n"+
		svcDoc("np", "{type: NodePort, ports: [{name: a, port: 80, nodePort: 30080}, {name: b, port: 81}]}")+"---\n"+
		svcDoc("lb", "{type: LoadBalancer, externalTrafficPolicy: Local, ports: [{port: 80}]}")+"---\n"+
		svcDoc("headless", "{clusterIP: None, ports: [{port: 80}]}")+"---\n"+
		svcDoc("ext", "{type: ExternalName, externalName: example.com}")+"---\n"+
		svcDoc("fixed", "{clusterIP: 10.96.200.10, ports: [{port: 80}]}"),
		"create", "-f", "-", "-o", `jsonpath={.metadata.name}:{.spec.clusterIPs}:{.spec.ipFamilyPolicy}:{.spec.ports[*].nodePort}:{.spec.healthCheckNodePort}{"\n"}`)
	fields := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(created), "\n") {
		f := strings.Split(line, ":")
		fields[f[0]] = f[1:]
	}
	cip := strings.Trim(fields["cip"][0], `["]`)
	if !strings.HasPrefix(cip, "10.96.") || fields["cip"][1] != "SingleStack" {
		t.Errorf("cip: %v", fields["cip"])
	}
	if np := strings.Fields(fields["np"][2]); len(np) != 2 || np[0] != "30080" || np[1] < "30000" || np[1] > "30099" {
		t.Errorf("np's node ports: %v", fields["np"])
	}
	if fields["lb"][2] == "" || fields["lb"][3] == "" {
		t.Errorf("lb's node port and health check node port: %v", fields["lb"])
	}
	wantEqual(t, "headless", strings.Join(fields["headless"][:2], ":"), `["None"]:RequireDualStack`)
	wantEqual(t, "ExternalName", strings.Join(fields["ext"][:2], ":"), ":")
	wantEqual(t, "requested IP", fields["fixed"][0], `["10.96.200.10"]`)
	wantEqual(t, "IPAddress of cip", l.must(t, "get", "ipaddress", cip, "-o", "jsonpath={.spec.parentRef.namespace}/{.spec.parentRef.name}"), "svc/cip")

	// Refusals, word for word kube-apiserver 1.37's.
	for _, tc := range []struct{ doc, flags, want string }{
		{svcDoc("t1", "{clusterIP: 10.96.200.10, ports: [{port: 80}]}"), "",
			`The Service "t1" is invalid: spec.clusterIPs: Invalid value: ["10.96.200.10"]: failed to allocate IP 10.96.200.10: provided IP is already allocated`},
		{svcDoc("t2", "{clusterIP: 10.97.0.10, ports: [{port: 80}]}"), "",
			`The Service "t2" is invalid: spec.clusterIPs: Invalid value: ["10.97.0.10"]: failed to allocate IP 10.97.0.10: the provided network does not match the current range`},
		{svcDoc("t3", "{type: NodePort, ports: [{port: 80, nodePort: 30080}]}"), "",
			`The Service "t3" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated`},
		{svcDoc("t4", "{type: NodePort, ports: [{port: 80, nodePort: 30100}]}"), "",
			`The Service "t4" is invalid: spec.ports[0].nodePort: Invalid value: 30100: provided port is not in the valid range. The range of valid ports is 30000-30099`},
		{svcDoc("t5", "{ipFamilyPolicy: RequireDualStack, ports: [{port: 80}]}"), "",
			`The Service "t5" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services`},
		{svcDoc("t6", "{type: NodePort, ports: [{port: 80, nodePort: 30080}]}"), "--dry-run=server",
			`The Service "t6" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated`},
	} {
		args := []string{"create", "-f", "-"}
		if tc.flags != "" {
			args = append(args, tc.flags)
		}
		wantEqual(t, "refusal", strings.TrimSpace(l.fails(t, tc.doc, args...)), tc.want)
	}
	// kube's dry run answers placeholders (the range's network address, port 32769) and keeps nothing.
	wantEqual(t, "dry run", l.mustIn(t, svcDoc("dry", "{type: NodePort, ports: [{port: 80}]}"), "create", "-f", "-", "--dry-run=server", "-o",
		"jsonpath={.spec.clusterIP} {.spec.ports[0].nodePort}"), "10.96.0.0 32769")
	l.fails(t, "", "-n", "svc", "get", "service", "dry")

	// Type changes: to NodePort allocates, back to ClusterIP and to ExternalName releases.
	if out := l.must(t, "-n", "svc", "patch", "service", "cip", "-p", `{"spec":{"type":"NodePort"}}`, "-o", "jsonpath={.spec.ports[0].nodePort}"); out < "30000" || out > "30099" {
		t.Errorf("ClusterIP to NodePort: node port %q", out)
	}
	wantEqual(t, "NodePort to ClusterIP", l.must(t, "-n", "svc", "patch", "service", "np", "-p", `{"spec":{"type":"ClusterIP"}}`, "-o", "jsonpath={.spec.ports[*].nodePort}"), "")
	l.must(t, "-n", "svc", "patch", "service", "fixed", "-p", `{"spec":{"type":"ExternalName","externalName":"x.example.com"}}`)
	l.fails(t, "", "get", "ipaddress", "10.96.200.10")
	l.mustIn(t, svcDoc("np2", "{type: NodePort, clusterIP: 10.96.200.10, ports: [{port: 80, nodePort: 30080}]}"), "create", "-f", "-")

	// Delete releases: the IP and port are free again, their IPAddress gone.
	l.must(t, "-n", "svc", "delete", "service", "np2", "cip")
	l.fails(t, "", "get", "ipaddress", "10.96.200.10")
	l.fails(t, "", "get", "ipaddress", cip)
	l.mustIn(t, svcDoc("np3", "{type: NodePort, clusterIP: 10.96.200.10, ports: [{port: 80, nodePort: 30080}]}"), "create", "-f", "-")

	// Fill the node port range but one, restart, and take the rest: every port once.
	held := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(l.must(t, "get", "services", "-A", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.spec.ports[*].nodePort} {.spec.healthCheckNodePort}{"\n"}{end}`)), "\n") {
		f := strings.Fields(line)
		for _, p := range f[1:] {
			held[p] = f[0]
		}
	}
	var docs []string
	for i := len(held); i < 99; i++ {
		docs = append(docs, svcDoc("fill-"+strconv.Itoa(i), "{type: NodePort, ports: [{port: 80}]}"))
	}
	l.mustIn(t, strings.Join(docs, "---\n"), "create", "-f", "-")
	l.Restart(t)
	last := l.mustIn(t, svcDoc("last", "{type: NodePort, ports: [{port: 80}]}"), "create", "-f", "-", "-o", "jsonpath={.spec.ports[0].nodePort}")
	seen := map[string]bool{}
	for _, p := range strings.Fields(l.must(t, "get", "services", "-A", "-o", `jsonpath={.items[*].spec.ports[*].nodePort} {.items[*].spec.healthCheckNodePort}`)) {
		if seen[p] {
			t.Errorf("node port %s handed out twice (the last one after the restart: %s)", p, last)
		}
		seen[p] = true
	}
	if len(seen) != 100 {
		t.Errorf("%d node ports held, want the whole range of 100", len(seen))
	}
	errOut := l.fails(t, svcDoc("full", "{type: NodePort, ports: [{port: 80}]}"), "create", "-f", "-")
	wantContains(t, "a full range", errOut, "failed to allocate a nodePort: range is full")

	// Cluster IPs survive the restart too: a requested one that is held stays refused.
	wantContains(t, "held IP after restart", l.fails(t, svcDoc("t7", "{clusterIP: 10.96.200.10, ports: [{port: 80}]}"), "create", "-f", "-"),
		"provided IP is already allocated")
	if code, body := l.do(t, http.MethodGet, "/apis/networking.k8s.io/v1/ipaddresses/10.96.200.10", "", "", true); code != http.StatusOK {
		t.Errorf("IPAddress after restart: %d %s", code, body)
	}
	l.must(t, "delete", "namespace", "svc")
}

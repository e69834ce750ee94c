package acceptance

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os/exec"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// object is the part of an object the tests read back from `kubectl get -o json`.
type object struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Type       string            `json:"type"`
	Data       map[string]string `json:"data"`
	StringData map[string]string `json:"stringData"`
	Metadata   struct {
		Name              string            `json:"name"`
		Namespace         string            `json:"namespace"`
		UID               string            `json:"uid"`
		ResourceVersion   string            `json:"resourceVersion"`
		CreationTimestamp string            `json:"creationTimestamp"`
		Labels            map[string]string `json:"labels"`
		Annotations       map[string]string `json:"annotations"`
	} `json:"metadata"`
}

var uidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// getObject runs `kubectl get ARGS -o json` and decodes the object.
func (l *lapisProc) getObject(t testing.TB, args ...string) object {
	t.Helper()
	var o object
	out := l.must(t, append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	return o
}

// checkServerMeta checks the metadata the server sets on create.
func checkServerMeta(t testing.TB, o object) {
	t.Helper()
	if !uidPattern.MatchString(o.Metadata.UID) {
		t.Errorf("%s: uid %q is not a UUID", o.Metadata.Name, o.Metadata.UID)
	}
	if rv, err := strconv.ParseUint(o.Metadata.ResourceVersion, 10, 64); err != nil || rv == 0 {
		t.Errorf("%s: resourceVersion %q is not a positive integer", o.Metadata.Name, o.Metadata.ResourceVersion)
	}
	ts, err := time.Parse(time.RFC3339, o.Metadata.CreationTimestamp)
	if err != nil || time.Since(ts) > 5*time.Minute || time.Until(ts) > 5*time.Second {
		t.Errorf("%s: creationTimestamp %q is not a recent RFC 3339 time", o.Metadata.Name, o.Metadata.CreationTimestamp)
	}
}

func TestConfigMapsAndSecrets(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	for _, ns := range []string{"lit", "apply", "patch", "conflict", "gen", "sel", "del", "watch"} {
		l.must(t, "create", "ns", ns)
	}
	// Every namespace has kube-root-ca.crt, as under kube-controller-manager: the lists below see it.
	l.waitNamespaceDefaults(t, "sel", "del", "watch")

	// The steps run in order: "create of an existing name" creates the Secret the first made.
	inOrder(t, l, []step{
		{"create from literals and files", createConfigMapsAndSecrets},
		{"apply create update unchanged", applyConfigMapCreateUpdateUnchanged},
		{"patch", patchConfigMap},
		{"replace with a stale resourceVersion conflicts", replaceWithStaleResourceVersion},
		{"immutable fields", immutableConfigMapAndSecretFields},
		{"create of an existing name", createExistingName},
		{"generateName", createWithGenerateName},
		{"label and field selectors", listByLabelAndFieldSelectors},
		{"delete by selector, --all and deletecollection", deleteBySelectorAllAndCollection},
		{"watch", watchConfigMapsWithKubectl},
	})
}

func createConfigMapsAndSecrets(t *testing.T, l *lapisProc) {
	file := writeFile(t, "app.properties", "a=1\nb=2\n")
	wantEqual(t, "create cm", l.must(t, "create", "configmap", "settings", "-n", "lit",
		"--from-literal=color=blue", "--from-literal=size=10", "--from-file=app.properties="+file),
		"configmap/settings created")
	cm := l.getObject(t, "get", "configmap", "settings", "-n", "lit")
	checkServerMeta(t, cm)
	if want := map[string]string{"color": "blue", "size": "10", "app.properties": "a=1\nb=2\n"}; !reflect.DeepEqual(cm.Data, want) {
		t.Errorf("configmap data = %q, want %q", cm.Data, want)
	}
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Metadata.Namespace != "lit" {
		t.Errorf("configmap apiVersion/kind/namespace = %s/%s/%s", cm.APIVersion, cm.Kind, cm.Metadata.Namespace)
	}
	wantContains(t, "get -o yaml", l.must(t, "get", "configmap", "settings", "-n", "lit", "-o", "yaml"),
		"data:\n  app.properties: |\n    a=1\n    b=2\n  color: blue\n  size: \"10\"\nkind: ConfigMap\n")

	l.must(t, "create", "secret", "generic", "creds", "-n", "lit", "--from-literal=user=admin", "--from-file=key="+file)
	s := l.getObject(t, "get", "secret", "creds", "-n", "lit")
	checkServerMeta(t, s)
	if want := map[string]string{"user": "YWRtaW4=", "key": "YT0xCmI9Mgo="}; s.Type != "Opaque" || !reflect.DeepEqual(s.Data, want) {
		t.Errorf("secret type %q data %q, want Opaque %q", s.Type, s.Data, want)
	}

	// A manifest without type defaults to Opaque; stringData is folded into data.
	l.mustIn(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: manifest, namespace: lit}\nstringData: {pw: hunter2}\n", "create", "-f", "-")
	s = l.getObject(t, "get", "secret", "manifest", "-n", "lit")
	if want := map[string]string{"pw": "aHVudGVyMg=="}; s.Type != "Opaque" || !reflect.DeepEqual(s.Data, want) || s.StringData != nil {
		t.Errorf("secret type %q data %q stringData %q, want Opaque %q and no stringData", s.Type, s.Data, s.StringData, want)
	}
	if cm.Metadata.UID == s.Metadata.UID {
		t.Errorf("two objects share uid %s", s.Metadata.UID)
	}
}

func applyConfigMapCreateUpdateUnchanged(t *testing.T, l *lapisProc) {
	manifest := func(v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: apply, labels: {app: web}}\ndata: {level: \"" + v + "\"}\n"
	}
	steps := []struct{ value, want string }{
		{"1", "configmap/app created"},
		{"1", "configmap/app unchanged"},
		{"2", "configmap/app configured"},
		{"2", "configmap/app unchanged"},
	}
	for _, s := range steps {
		wantEqual(t, "apply level="+s.value, l.mustIn(t, manifest(s.value), "apply", "-f", "-"), s.want)
	}
	cm := l.getObject(t, "get", "configmap", "app", "-n", "apply")
	if cm.Data["level"] != "2" || cm.Metadata.Labels["app"] != "web" {
		t.Errorf("after apply: data %q labels %q", cm.Data, cm.Metadata.Labels)
	}
	wantEqual(t, "last-applied-configuration", cm.Metadata.Annotations["kubectl.kubernetes.io/last-applied-configuration"],
		`{"apiVersion":"v1","data":{"level":"2"},"kind":"ConfigMap","metadata":{"annotations":{},"labels":{"app":"web"},"name":"app","namespace":"apply"}}`)
}

func patchConfigMap(t *testing.T, l *lapisProc) {
	l.must(t, "create", "configmap", "p", "-n", "patch", "--from-literal=a=1")
	steps := []struct {
		typ, patch, wantOut, wantData string
	}{
		{"merge", `{"data":{"b":"2"}}`, "configmap/p patched", `{"a":"1","b":"2"}`},
		{"merge", `{"data":{"b":"2"}}`, "configmap/p patched (no change)", `{"a":"1","b":"2"}`},
		{"json", `[{"op":"replace","path":"/data/a","value":"10"},{"op":"remove","path":"/data/b"}]`, "configmap/p patched", `{"a":"10"}`},
		{"strategic", `{"data":{"c":"3"},"metadata":{"labels":{"x":"y"}}}`, "configmap/p patched", `{"a":"10","c":"3"}`},
		{"merge", `{"data":{"c":null}}`, "configmap/p patched", `{"a":"10"}`},
	}
	for _, s := range steps {
		wantEqual(t, s.typ+" patch "+s.patch, l.must(t, "patch", "configmap", "p", "-n", "patch", "--type", s.typ, "-p", s.patch), s.wantOut)
		wantEqual(t, "data after "+s.patch, l.must(t, "get", "configmap", "p", "-n", "patch", "-o", "jsonpath={.data}"), s.wantData)
	}
	wantEqual(t, "labels", l.must(t, "get", "configmap", "p", "-n", "patch", "-o", "jsonpath={.metadata.labels}"), `{"x":"y"}`)
}

func replaceWithStaleResourceVersion(t *testing.T, l *lapisProc) {
	l.must(t, "create", "configmap", "x", "-n", "conflict", "--from-literal=v=1")
	stale := l.must(t, "get", "configmap", "x", "-n", "conflict", "-o", "yaml")
	l.must(t, "patch", "configmap", "x", "-n", "conflict", "--type=merge", "-p", `{"data":{"v":"2"}}`)
	wantEqual(t, "replace", l.fails(t, strings.Replace(stale, "v: \"1\"", "v: \"3\"", 1), "replace", "-f", "-"),
		`Error from server (Conflict): error when replacing "STDIN": Operation cannot be fulfilled on configmaps "x": the object has been modified; please apply your changes to the latest version and try again`)
	wantEqual(t, "data", l.must(t, "get", "configmap", "x", "-n", "conflict", "-o", "jsonpath={.data.v}"), "2")

	// With the current resourceVersion the same replace goes through and bumps it.
	fresh := l.getObject(t, "get", "configmap", "x", "-n", "conflict")
	current := l.must(t, "get", "configmap", "x", "-n", "conflict", "-o", "yaml")
	wantEqual(t, "replace", l.mustIn(t, strings.Replace(current, "v: \"2\"", "v: \"3\"", 1), "replace", "-f", "-"), "configmap/x replaced")
	after := l.getObject(t, "get", "configmap", "x", "-n", "conflict")
	if after.Data["v"] != "3" || after.Metadata.ResourceVersion == fresh.Metadata.ResourceVersion || after.Metadata.UID != fresh.Metadata.UID {
		t.Errorf("after replace: data %q rv %s (was %s) uid %s (was %s)", after.Data, after.Metadata.ResourceVersion,
			fresh.Metadata.ResourceVersion, after.Metadata.UID, fresh.Metadata.UID)
	}
}

func immutableConfigMapAndSecretFields(t *testing.T, l *lapisProc) {
	l.must(t, "create", "configmap", "frozen", "-n", "conflict", "--from-literal=a=b")
	l.must(t, "patch", "configmap", "frozen", "-n", "conflict", "--type=merge", "-p", `{"immutable":true}`)
	wantEqual(t, "configmap data", l.fails(t, "", "patch", "configmap", "frozen", "-n", "conflict", "--type=merge", "-p", `{"data":{"a":"c"}}`),
		"The ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set")
	l.must(t, "create", "secret", "generic", "typed", "-n", "conflict", "--from-literal=a=b")
	wantEqual(t, "secret type", l.fails(t, "", "patch", "secret", "typed", "-n", "conflict", "--type=merge", "-p", `{"type":"example.com/other"}`),
		`The Secret "typed" is invalid: type: Invalid value: "example.com/other": field is immutable`)
}

func createExistingName(t *testing.T, l *lapisProc) {
	m := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dup, namespace: conflict}\n"
	l.mustIn(t, m, "create", "-f", "-")
	wantEqual(t, "second create", l.fails(t, m, "create", "-f", "-"),
		`Error from server (AlreadyExists): error when creating "STDIN": configmaps "dup" already exists`)
	wantEqual(t, "secret", l.fails(t, "", "create", "secret", "generic", "creds", "-n", "lit"),
		`error: failed to create secret secrets "creds" already exists`)
}

func createWithGenerateName(t *testing.T, l *lapisProc) {
	m := "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: job-, namespace: gen, labels: {made: gen}}\n"
	created := regexp.MustCompile(`^configmap/(job-[a-z0-9]{5}) created$`)
	var names []string
	for range 2 {
		out := strings.TrimSpace(l.mustIn(t, m, "create", "-f", "-"))
		match := created.FindStringSubmatch(out)
		if match == nil {
			t.Fatalf("create with generateName printed %q", out)
		}
		names = append(names, "configmap/"+match[1])
	}
	if names[0] == names[1] {
		t.Errorf("generateName produced %s twice", names[0])
	}
	got := strings.Fields(l.must(t, "get", "configmaps", "-n", "gen", "-l", "made=gen", "-o", "name"))
	if len(got) != 2 || !(got[0] == names[0] && got[1] == names[1] || got[0] == names[1] && got[1] == names[0]) {
		t.Errorf("listed %q, want %q", got, names)
	}
}

func listByLabelAndFieldSelectors(t *testing.T, l *lapisProc) {
	l.must(t, "create", "configmap", "front", "-n", "sel")
	l.must(t, "create", "configmap", "back", "-n", "sel")
	l.must(t, "create", "configmap", "db", "-n", "sel")
	l.must(t, "label", "configmap", "front", "-n", "sel", "app=web", "tier=front")
	l.must(t, "label", "configmap", "back", "-n", "sel", "app=web", "tier=back")
	l.must(t, "label", "configmap", "db", "-n", "sel", "app=db")
	l.must(t, "create", "secret", "generic", "opaque", "-n", "sel", "--from-literal=a=b")
	l.must(t, "create", "secret", "docker-registry", "pull", "-n", "sel", "--docker-server=r.example.com", "--docker-username=u", "--docker-password=p")
	certPEM, keyPEM := selfSignedPair(t)
	l.must(t, "create", "secret", "tls", "cert", "-n", "sel", "--cert="+writeFile(t, "tls.crt", certPEM), "--key="+writeFile(t, "tls.key", keyPEM))

	cases := []struct {
		resource, flag, selector, want string
	}{
		{"configmaps", "-l", "app=web", "configmap/back configmap/front"},
		{"configmaps", "-l", "app!=web", "configmap/db configmap/kube-root-ca.crt"},
		{"configmaps", "-l", "tier in (front,back)", "configmap/back configmap/front"},
		{"configmaps", "-l", "!tier", "configmap/db configmap/kube-root-ca.crt"},
		{"configmaps", "-l", "app=web,tier=back", "configmap/back"},
		{"configmaps", "-l", "app=nothing", ""},
		{"configmaps", "--field-selector", "metadata.name=front", "configmap/front"},
		{"configmaps", "--field-selector", "metadata.name!=front", "configmap/back configmap/db configmap/kube-root-ca.crt"},
		{"configmaps", "--field-selector", "metadata.namespace=sel,metadata.name=db", "configmap/db"},
		{"secrets", "--field-selector", "type=Opaque", "secret/opaque"},
		{"secrets", "--field-selector", "type=kubernetes.io/dockerconfigjson", "secret/pull"},
		{"secrets", "--field-selector", "type!=Opaque", "secret/cert secret/pull"},
		{"secrets", "--field-selector", "type=kubernetes.io/tls", "secret/cert"},
	}
	for _, c := range cases {
		out := l.must(t, "get", c.resource, "-n", "sel", c.flag, c.selector, "-o", "name")
		wantEqual(t, c.resource+" "+c.flag+" "+c.selector, strings.Join(strings.Fields(out), " "), c.want)
	}
	wantEqual(t, "chunked list", strings.Join(strings.Fields(l.must(t, "get", "configmaps", "-n", "sel", "--chunk-size=1", "-o", "name")), " "),
		"configmap/back configmap/db configmap/front configmap/kube-root-ca.crt")
	wantEqual(t, "all namespaces by name", l.must(t, "get", "configmaps", "-A", "--field-selector", "metadata.name=db", "-o", "name"), "configmap/db")
	wantEqual(t, "unsupported field", l.fails(t, "", "get", "configmaps", "-n", "sel", "--field-selector", "data.a=1"),
		`Error from server (BadRequest): Unable to find "/v1, Resource=configmaps" that match label selector "", field selector "data.a=1": "data.a" is not a known field selector: only "metadata.name", "metadata.namespace"`)
}

func deleteBySelectorAllAndCollection(t *testing.T, l *lapisProc) {
	for _, name := range []string{"a1", "a2", "b1", "b2", "c1"} {
		l.must(t, "create", "configmap", name, "-n", "del")
		l.must(t, "label", "configmap", name, "-n", "del", "group="+name[:1])
	}
	wantEqual(t, "delete -l", l.must(t, "delete", "configmaps", "-n", "del", "-l", "group=a"),
		"configmap \"a1\" deleted\nconfigmap \"a2\" deleted")
	wantEqual(t, "left", strings.Join(strings.Fields(l.must(t, "get", "configmaps", "-n", "del", "-o", "name")), " "),
		"configmap/b1 configmap/b2 configmap/c1 configmap/kube-root-ca.crt")
	// DELETE on the collection itself (kubectl delete --all deletes one by one).
	l.must(t, "delete", "--raw", "/api/v1/namespaces/del/configmaps?labelSelector=group%3Db")
	wantEqual(t, "left after deletecollection", l.must(t, "get", "configmaps", "-n", "del", "-o", "name"), "configmap/c1\nconfigmap/kube-root-ca.crt")
	wantEqual(t, "delete --all", l.must(t, "delete", "configmaps", "-n", "del", "--all"), "configmap \"c1\" deleted\nconfigmap \"kube-root-ca.crt\" deleted")
	// kube-root-ca.crt is published again (as kube does); nothing else is left.
	out, errOut, err := l.kubectl("get", "configmaps", "-n", "del", "--field-selector", "metadata.name!=kube-root-ca.crt")
	if err != nil || out != "" || strings.TrimSpace(errOut) != "No resources found in del namespace." {
		t.Errorf("after delete --all: %q %q %v", out, errOut, err)
	}
	wantEqual(t, "delete missing", l.fails(t, "", "delete", "configmap", "c1", "-n", "del"),
		`Error from server (NotFound): configmaps "c1" not found`)
}

func watchConfigMapsWithKubectl(t *testing.T, l *lapisProc) {
	l.must(t, "create", "configmap", "w", "-n", "watch")
	cmd := exec.Command(kubectlBin, "get", "configmaps", "-n", "watch", "--watch", "--output-watch-events",
		"-o", `jsonpath={.type} {.object.metadata.name} {.object.data.k}{"\n"}`)
	cmd.Env = l.env()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(want string) {
		t.Helper()
		select {
		case got, ok := <-lines:
			if !ok {
				t.Fatalf("watch ended, want %q", want)
			}
			wantEqual(t, "watch event", got, want)
		case <-time.After(10 * time.Second):
			t.Fatalf("no watch event within 10s, want %q", want)
		}
	}
	next("ADDED kube-root-ca.crt ")
	next("ADDED w ")
	l.must(t, "patch", "configmap", "w", "-n", "watch", "--type=merge", "-p", `{"data":{"k":"v"}}`)
	next("MODIFIED w v")
	l.must(t, "create", "configmap", "w2", "-n", "watch", "--from-literal=k=2")
	next("ADDED w2 2")
	l.must(t, "delete", "configmap", "w", "-n", "watch")
	next("DELETED w v")
}

func TestOtherBuiltinTypes(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.must(t, "create", "ns", "types")

	t.Run("serviceaccounts", func(t *testing.T) {
		l.waitNamespaceDefaults(t, "types")
		wantEqual(t, "create", l.must(t, "create", "serviceaccount", "bot", "-n", "types"), "serviceaccount/bot created")
		l.mustIn(t, "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: robot, namespace: types}\nautomountServiceAccountToken: false\nsecrets: [{name: robot-token}]\n", "apply", "-f", "-")
		wantEqual(t, "list", l.must(t, "get", "sa", "-n", "types", "-o", "name"), "serviceaccount/bot\nserviceaccount/default\nserviceaccount/robot")
		wantEqual(t, "fields", l.must(t, "get", "sa", "robot", "-n", "types", "-o", "jsonpath={.automountServiceAccountToken} {.secrets[0].name}"),
			"false robot-token")
		checkServerMeta(t, l.getObject(t, "get", "sa", "bot", "-n", "types"))
	})

	t.Run("leases", func(t *testing.T) {
		wantEqual(t, "apply", l.mustIn(t, `apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: leader, namespace: types}
spec: {holderIdentity: pod-a, leaseDurationSeconds: 15, leaseTransitions: 2, renewTime: "2024-01-01T00:00:00.123456Z"}
`, "apply", "-f", "-"), "lease.coordination.k8s.io/leader created")
		wantEqual(t, "spec", l.must(t, "get", "leases.coordination.k8s.io", "leader", "-n", "types", "-o", "jsonpath={.spec}"),
			`{"holderIdentity":"pod-a","leaseDurationSeconds":15,"leaseTransitions":2,"renewTime":"2024-01-01T00:00:00.123456Z"}`)
		l.must(t, "patch", "lease", "leader", "-n", "types", "--type=merge", "-p", `{"spec":{"holderIdentity":"pod-b","leaseTransitions":3}}`)
		wantEqual(t, "after patch", l.must(t, "get", "lease", "leader", "-n", "types", "-o", "jsonpath={.apiVersion} {.spec.holderIdentity} {.spec.leaseTransitions}"),
			"coordination.k8s.io/v1 pod-b 3")
	})

	// kubectl asks for a Table and prints the server's columns; without one it falls back to NAME AGE.
	t.Run("kubectl get prints the server's columns", func(t *testing.T) {
		l.must(t, "create", "configmap", "two", "-n", "types", "--from-literal=a=1", "--from-literal=b=2")
		l.must(t, "create", "secret", "generic", "one", "-n", "types", "--from-literal=a=1")
		l.applyCRD(t, printerCRD, "dials.print.example.com")
		l.mustIn(t, "apiVersion: print.example.com/v1\nkind: Dial\nmetadata: {name: d1, namespace: types}\nspec: {size: 7}\n", "create", "-f", "-")
		cases := []struct {
			args        []string
			header, row string
		}{
			{[]string{"namespaces", "types"}, "NAME STATUS AGE", "types Active"},
			{[]string{"configmaps", "two", "-n", "types"}, "NAME DATA AGE", "two 2"},
			{[]string{"secrets", "one", "-n", "types"}, "NAME TYPE DATA AGE", "one Opaque 1"},
			{[]string{"crd", "dials.print.example.com"}, "NAME SCOPE VERSIONS CREATED AT", "dials.print.example.com Namespaced v1(storage) 20"},
			{[]string{"dials", "d1", "-n", "types"}, "NAME SIZE AGE", "d1 7"},
		}
		for _, c := range cases {
			lines := strings.Split(strings.TrimSpace(l.must(t, append([]string{"get"}, c.args...)...)), "\n")
			if len(lines) != 2 {
				t.Errorf("kubectl get %s printed %q", strings.Join(c.args, " "), lines)
				continue
			}
			wantEqual(t, "kubectl get "+strings.Join(c.args, " ")+" header", strings.Join(strings.Fields(lines[0]), " "), c.header)
			if row := strings.Join(strings.Fields(lines[1]), " "); !strings.HasPrefix(row, c.row) {
				t.Errorf("kubectl get %s row %q, want it to start with %q", strings.Join(c.args, " "), row, c.row)
			}
		}
	})

	t.Run("core events read as events.k8s.io", func(t *testing.T) {
		l.mustIn(t, `apiVersion: v1
kind: Event
metadata: {name: ev1, namespace: types}
involvedObject: {apiVersion: v1, kind: ConfigMap, name: settings, namespace: types}
reason: Tested
message: hello world
type: Warning
source: {component: tester}
count: 3
firstTimestamp: "2024-01-01T00:00:00Z"
lastTimestamp: "2024-01-01T00:01:00Z"
`, "create", "-f", "-")
		out := l.must(t, "get", "events.v1.events.k8s.io", "ev1", "-n", "types", "-o", "yaml")
		for _, want := range []string{
			"apiVersion: events.k8s.io/v1\n",
			"deprecatedCount: 3\n",
			"deprecatedFirstTimestamp: \"2024-01-01T00:00:00Z\"\n",
			"deprecatedLastTimestamp: \"2024-01-01T00:01:00Z\"\n",
			"deprecatedSource:\n  component: tester\n",
			"kind: Event\n",
			"note: hello world\n",
			"reason: Tested\n",
			"regarding:\n  apiVersion: v1\n  kind: ConfigMap\n  name: settings\n  namespace: types\n",
			"type: Warning\n",
		} {
			wantContains(t, "events.k8s.io view", out, want)
		}
		if strings.Contains(out, "involvedObject") || strings.Contains(out, "message:") {
			t.Errorf("events.k8s.io view still has core/v1 field names:\n%s", out)
		}
		wantEqual(t, "list", l.must(t, "get", "events.v1.events.k8s.io", "-n", "types", "-o", "name"), "event.events.k8s.io/ev1")
		wantEqual(t, "core view", l.must(t, "get", "events", "ev1", "-n", "types", "-o", "jsonpath={.apiVersion}|{.message}|{.involvedObject.name}|{.count}"),
			"v1|hello world|settings|3")
	})
}

// printerCRD has additionalPrinterColumns.
const printerCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: dials.print.example.com
spec:
  group: print.example.com
  scope: Namespaced
  names: {plural: dials, singular: dial, kind: Dial}
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
`

// selfSignedPair returns a PEM certificate and key for `kubectl create secret tls`.
func selfSignedPair(t testing.TB) (certPEM, keyPEM string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "example.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
}

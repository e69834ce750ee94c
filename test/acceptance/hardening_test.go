package acceptance

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// answer is one HTTP response, read whole.
type answer struct {
	code   int
	header http.Header
	body   string
}

// status decodes the answer as a metav1.Status (message and reason).
func (a answer) status() (message, reason string) {
	var s struct{ Message, Reason string }
	_ = json.Unmarshal([]byte(a.body), &s)
	return s.Message, s.Reason
}

// request sends one HTTPS request as the admin, with headers given as "Name: value".
func (l *lapisProc) request(t testing.TB, method, path, body string, headers ...string) answer {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(l.caData) {
		t.Fatalf("kubeconfig has no usable CA")
	}
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	req, err := http.NewRequest(method, l.server+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+l.token)
	return exchange(t, client, req, body, headers)
}

// exchange sends req through client, with body's JSON content type and headers given as
// "Name: value" (empty ones skipped), and reads the answer whole.
func exchange(t testing.TB, client *http.Client, req *http.Request, body string, headers []string) answer {
	t.Helper()
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		if h == "" {
			continue
		}
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Set(name, value)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.RequestURI(), err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", req.Method, req.URL.RequestURI(), err)
	}
	return answer{code: resp.StatusCode, header: resp.Header, body: string(b)}
}

const blobCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: blobs.x.example.com}
spec:
  group: x.example.com
  scope: Namespaced
  names: {plural: blobs, singular: blob, kind: Blob}
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// TestSubresourceVerbs sends every method to every subresource path lapis routes and expects
// kube-apiserver 1.37's answers (recorded from it); none may change or delete the object.
func TestSubresourceVerbs(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.applyCRD(t, blobCRD, "blobs.x.example.com")
	l.must(t, "create", "ns", "victim")
	l.must(t, "create", "configmap", "c", "-n", "victim")
	l.mustIn(t, `{"apiVersion":"x.example.com/v1","kind":"Blob","metadata":{"name":"b","namespace":"victim"},"spec":{"replicas":1}}`, "create", "-f", "-")

	const (
		generic405 = "405 MethodNotAllowed the server does not allow this method on the requested resource"
		generic404 = "404 NotFound the server could not find the requested resource"
	)
	blob405 := func(verb string) string {
		return fmt.Sprintf(`405 MethodNotAllowed %s is not supported on resources of kind "blobs.x.example.com"`, verb)
	}
	ns := "/api/v1/namespaces/victim"
	crd := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/blobs.x.example.com"
	blob := "/apis/x.example.com/v1/namespaces/victim/blobs/b"
	cases := []struct{ method, path, want string }{
		{"DELETE", ns + "/status", generic405},
		{"POST", ns + "/status", generic405},
		{"DELETE", ns + "/finalize", generic405},
		{"GET", ns + "/finalize", generic405},
		{"PATCH", ns + "/finalize", generic405},
		{"POST", ns + "/finalize", generic405},
		{"DELETE", "/api/v1/namespaces", generic405}, // namespaces have no deletecollection
		{"DELETE", crd + "/status", generic405},
		{"POST", crd + "/status", generic405},
		{"DELETE", blob + "/status", blob405("delete")},
		{"POST", blob + "/status", blob405("create")},
		{"DELETE", blob + "/scale", blob405("delete")},
		{"POST", blob + "/scale", blob405("create")},
		{"GET", blob + "/other", `404 NotFound blobs.x.example.com "b" not found`},
		{"DELETE", blob + "/other", `404 NotFound blobs.x.example.com "b" not found`},
		{"GET", ns + "/configmaps/c/status", generic404},
		{"DELETE", ns + "/configmaps/c/status", generic404},
		{"POST", ns + "/configmaps/c", generic405},
		{"OPTIONS", ns + "/configmaps/c", generic405},
		{"FOO", ns + "/configmaps/c", generic405},
		{"OPTIONS", blob, blob405("")},
		{"FOO", blob + "/status", blob405("")},
	}
	for _, c := range cases {
		body, header := "{}", "Content-Type: application/merge-patch+json"
		if c.method == "DELETE" || c.method == "GET" {
			body, header = "", ""
		}
		a := l.request(t, c.method, c.path, body, header)
		msg, reason := a.status()
		if got := fmt.Sprintf("%d %s %s", a.code, reason, msg); got != c.want {
			t.Errorf("%s %s: got %q, want %q", c.method, c.path, got, c.want)
		}
	}
	// HEAD: built-in routes have none, the apiextensions handler serves it as a GET.
	if a := l.request(t, "HEAD", ns+"/configmaps/c", ""); a.code != 405 {
		t.Errorf("HEAD of a ConfigMap: %d, want 405", a.code)
	}
	if a := l.request(t, "HEAD", blob, ""); a.code != 200 {
		t.Errorf("HEAD of a custom resource: %d, want 200", a.code)
	}
	// A GET with a name and watch=true is a get, as in kube.
	if a := l.request(t, "GET", blob+"/status?watch=true", ""); a.code != 200 || !strings.Contains(a.body, `"kind":"Blob"`) {
		t.Errorf("GET status?watch=true: %d %s", a.code, a.body)
	}
	for _, obj := range [][]string{{"ns", "victim"}, {"crd", "blobs.x.example.com"}, {"blob", "b", "-n", "victim"}, {"configmap", "c", "-n", "victim"}} {
		out := l.must(t, append([]string{"get", "-o", "jsonpath={.metadata.deletionTimestamp}"}, obj...)...)
		if out != "" {
			t.Errorf("%v is being deleted", obj)
		}
	}
	// Kinds keep their own creation path: a POST to a custom resource's name creates what the
	// body names, as the apiextensions handler does.
	a := l.request(t, "POST", blob, `{"apiVersion":"x.example.com/v1","kind":"Blob","metadata":{"name":"b"}}`)
	if msg, _ := a.status(); a.code != 409 || msg != `blobs.x.example.com "b" already exists` {
		t.Errorf("POST to a custom resource's name: %d %s", a.code, a.body)
	}
	// kube 1.37 answers a custom resource's deletion with a Status, not the object.
	a = l.request(t, "DELETE", blob, "")
	var st struct{ Kind, Status string }
	_ = json.Unmarshal([]byte(a.body), &st)
	if a.code != 200 || st.Kind != "Status" || st.Status != "Success" {
		t.Errorf("DELETE of a custom resource: %d %s", a.code, a.body)
	}
}

// TestSubresourceWritesNeedTheObject: writes to a subresource never create the object.
func TestSubresourceWritesNeedTheObject(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.applyCRD(t, blobCRD, "blobs.x.example.com")
	l.must(t, "create", "ns", "v")
	nope := "/apis/x.example.com/v1/namespaces/v/blobs/nope"
	apply := "Content-Type: application/apply-patch+yaml"
	cases := []struct{ method, path, body, header, want string }{
		{"PUT", nope + "/status", `{"apiVersion":"x.example.com/v1","kind":"Blob","metadata":{"name":"nope"}}`, "", `blobs.x.example.com "nope" not found`},
		{"PUT", nope, `{"apiVersion":"x.example.com/v1","kind":"Blob","metadata":{"name":"nope"}}`, "", `blobs.x.example.com "nope" not found`},
		{"PATCH", nope + "/status?fieldManager=m", `{"apiVersion":"x.example.com/v1","kind":"Blob","metadata":{"name":"nope"},"status":{"a":1}}`, apply, `blobs.x.example.com "nope" not found`},
		{"PATCH", nope + "/scale?fieldManager=m", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"nope"},"spec":{"replicas":2}}`, apply, `blobs.x.example.com "nope" not found`},
		{"PATCH", "/api/v1/namespaces/nope/status?fieldManager=m", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"nope"}}`, apply, `namespaces "nope" not found`},
		{"PUT", "/api/v1/namespaces/nope/finalize", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"nope"}}`, "", `namespaces "nope" not found`},
	}
	for _, c := range cases {
		a := l.request(t, c.method, c.path, c.body, c.header)
		if msg, _ := a.status(); a.code != 404 || msg != c.want {
			t.Errorf("%s %s: %d %s, want 404 %s", c.method, c.path, a.code, a.body, c.want)
		}
	}
	for _, obj := range [][]string{{"blob", "nope", "-n", "v"}, {"ns", "nope"}} {
		l.fails(t, "", append([]string{"get"}, obj...)...)
	}
}

// TestWatchNegativeTimeout: a watch whose timeoutSeconds is negative ends at once, empty.
func TestWatchNegativeTimeout(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	start := time.Now()
	a := l.request(t, "GET", "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=-5", "")
	if a.code != 200 || a.body != "" || time.Since(start) > 10*time.Second {
		t.Errorf("got %d %q after %v; kube answers 200 with no events at once", a.code, a.body, time.Since(start))
	}
}

// TestListAtFutureResourceVersion: every list at a revision storage has not reached answers
// kube's 504 "Too large resource version", whatever its paging or match.
func TestListAtFutureResourceVersion(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	var list struct {
		Metadata struct{ ResourceVersion string }
	}
	_ = json.Unmarshal([]byte(l.must(t, "get", "--raw", "/api/v1/namespaces")), &list)
	current, _ := strconv.ParseInt(list.Metadata.ResourceVersion, 10, 64)
	future := strconv.FormatInt(current+1000, 10)
	// Lists kube reads from etcd (limit with an exact or implied-exact match) answer at once and
	// without Retry-After; the others wait for the watch cache (3 s) and say when to retry.
	for _, c := range []struct {
		query    string
		fromEtcd bool
	}{
		{"resourceVersion=" + future, false},
		{"resourceVersion=" + future + "&limit=1", true},
		{"resourceVersion=" + future + "&resourceVersionMatch=Exact", true},
		{"resourceVersion=" + future + "&resourceVersionMatch=Exact&limit=1", true},
		{"resourceVersion=" + future + "&resourceVersionMatch=NotOlderThan&limit=1", false},
	} {
		start := time.Now()
		a := l.request(t, "GET", "/api/v1/namespaces/default/configmaps?"+c.query, "")
		took := time.Since(start)
		if msg, reason := a.status(); a.code != 504 || reason != "Timeout" || !strings.Contains(msg, "Too large resource version: "+future) {
			t.Errorf("%s: %d %s", c.query, a.code, a.body)
		}
		if retry := a.header.Get("Retry-After"); c.fromEtcd != (retry == "") || c.fromEtcd && took > 2*time.Second {
			t.Errorf("%s: Retry-After %q after %v (kube: none and at once from etcd, 1 after waiting for its cache)", c.query, retry, took)
		}
	}
}

// TestConcurrentAppliesNeverConflict: writes that name no resourceVersion are retried until
// they land, as kube-apiserver does: 16 managers applying their own fields to one object
// never see 409.
func TestConcurrentAppliesNeverConflict(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.must(t, "create", "configmap", "shared", "-n", "default")
	const managers, applies = 16, 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	failures := map[int]int{}
	for m := range managers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range applies {
				body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"shared"},"data":{"m%d":"%d"}}`, m, i)
				a := l.request(t, "PATCH", fmt.Sprintf("/api/v1/namespaces/default/configmaps/shared?fieldManager=m%d", m), body,
					"Content-Type: application/apply-patch+yaml")
				if a.code != 200 {
					mu.Lock()
					failures[a.code]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Errorf("of %d applies, these failed (by status code): %v", managers*applies, failures)
	}
	var cm struct{ Data map[string]string }
	_ = json.Unmarshal([]byte(l.must(t, "get", "configmap", "shared", "-o", "json")), &cm)
	for m := range managers {
		if got := cm.Data[fmt.Sprintf("m%d", m)]; got != strconv.Itoa(applies-1) {
			t.Errorf("m%d's field is %q, want its last apply's %d", m, got, applies-1)
		}
	}
}

// TestWarningsBounded: an object with very many unknown fields is answered with kube's bounded
// set of Warning headers, which an HTTP/2 client can read.
func TestWarningsBounded(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.applyCRD(t, widgetCRD, "widgets.acme.example.com")
	var spec strings.Builder
	spec.WriteString(`{"size":1`)
	for i := range 100000 {
		fmt.Fprintf(&spec, `,"unknown%06d":1`, i)
	}
	spec.WriteString("}")
	body := `{"apiVersion":"acme.example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":` + spec.String() + `}`
	a := l.request(t, "POST", "/apis/acme.example.com/v1/namespaces/default/widgets", body)
	if a.code != 201 {
		t.Fatalf("create: %d %.300s", a.code, a.body)
	}
	warnings := a.header.Values("Warning")
	total := 0
	for _, w := range warnings {
		text, err := strconv.Unquote(strings.TrimPrefix(w, "299 - "))
		if err != nil {
			t.Fatalf("warning %q is not kube's form", w)
		}
		total += len([]rune(text))
	}
	// kube's recorder: past 4096 runes, each warning is cut to 256 and the rest dropped.
	if len(warnings) == 0 || total > 4096+256 {
		t.Errorf("%d warnings of %d runes in all; kube caps them at 4096 runes (+ one of 256)", len(warnings), total)
	}
	if !strings.Contains(warnings[0], `unknown field \"spec.unknown000000\"`) {
		t.Errorf("first warning %q", warnings[0])
	}
}

// deepBlob is a Blob whose spec nests levels objects deep.
func deepBlob(name string, levels int) string {
	return `{"apiVersion":"x.example.com/v1","kind":"Blob","metadata":{"name":"` + name + `"},"spec":` +
		strings.Repeat(`{"a":`, levels) + "1" + strings.Repeat("}", levels) + "}"
}

// TestDeepObjects: what is stored can be read back in every representation and deleted;
// objects too deep for that are refused when written; YAML of deep objects stays bounded.
func TestDeepObjects(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.applyCRD(t, blobCRD, "blobs.x.example.com")
	blobs := "/apis/x.example.com/v1/namespaces/default/blobs"
	table := "Accept: application/json;as=Table;v=v1;g=meta.k8s.io"

	for _, levels := range []int{9990, 9995, 9997, 9998, 9999} {
		a := l.request(t, "POST", blobs, deepBlob(fmt.Sprintf("d%d", levels), levels))
		switch {
		case a.code == 201:
			// Stored: every read and the delete must work.
			name := fmt.Sprintf("/d%d", levels)
			for _, h := range []string{table, "Accept: application/json", "Accept: application/yaml"} {
				if r := l.request(t, "GET", blobs+name, "", h); r.code != 200 {
					t.Errorf("depth %d stored, GET %s: %d %.200s", levels, h, r.code, r.body)
				}
				if r := l.request(t, "GET", blobs, "", h); r.code != 200 {
					t.Errorf("depth %d stored, LIST %s: %d %.200s", levels, h, r.code, r.body)
				}
			}
			if r := l.request(t, "DELETE", blobs+name, ""); r.code != 200 {
				t.Errorf("depth %d stored, DELETE: %d %.200s", levels, r.code, r.body)
			}
		case a.code >= 500:
			t.Errorf("depth %d: %d %.300s", levels, a.code, a.body)
		}
	}
	// A deep object that is accepted: its YAML must not explode (block YAML of n levels is
	// n² spaces); JSON is YAML too.
	const levels = 3000
	a := l.request(t, "POST", blobs, deepBlob("deep", levels))
	if a.code != 201 {
		t.Fatalf("depth %d refused: %d %.300s", levels, a.code, a.body)
	}
	asJSON := l.request(t, "GET", blobs+"/deep", "")
	asYAML := l.request(t, "GET", blobs+"/deep", "", "Accept: application/yaml")
	if asYAML.code != 200 || len(asYAML.body) > 16*len(asJSON.body)+1<<20 {
		t.Fatalf("YAML: %d, %d bytes for %d of JSON", asYAML.code, len(asYAML.body), len(asJSON.body))
	}
	var fromYAML, fromJSON any
	if err := yaml.Unmarshal([]byte(asYAML.body), &fromYAML); err != nil {
		t.Fatalf("YAML answer does not parse: %v", err)
	}
	_ = json.Unmarshal([]byte(asJSON.body), &fromJSON)
	if fmt.Sprint(fromYAML) != fmt.Sprint(fromJSON) {
		t.Errorf("YAML and JSON answers differ")
	}
	// Merge and JSON patches re-read every level of the object and the patch: their cost grows
	// with the square of the depth (a 9 900-deep merge patch took seconds and 1.5 GB), so deep
	// ones are refused at once, and the object is left as it was.
	deepPatch := `{"spec":` + strings.Repeat(`{"a":`, 9900) + "2" + strings.Repeat("}", 9900) + "}"
	for _, ct := range []string{"application/merge-patch+json", "application/apply-patch+yaml"} {
		start := time.Now()
		r := l.request(t, "PATCH", blobs+"/deep?fieldManager=m", deepPatch, "Content-Type: "+ct)
		if _, reason := r.status(); r.code != 413 || reason != "RequestEntityTooLarge" || time.Since(start) > 5*time.Second {
			t.Errorf("%s of a 9 900-deep patch: %d after %v: %.300s", ct, r.code, time.Since(start), r.body)
		}
	}
	if after := l.request(t, "GET", blobs+"/deep", ""); after.body != asJSON.body {
		t.Errorf("a refused patch changed the object")
	}
	// Ordinary objects still get block YAML.
	cm := l.request(t, "GET", "/api/v1/namespaces/default", "", "Accept: application/yaml")
	if !strings.Contains(cm.body, "\nmetadata:\n  ") {
		t.Errorf("namespace as YAML:\n%s", cm.body)
	}
}

// TestObjectsTooLargeForStorage: an object whose managedFields take it past etcd's request
// limit is stored without them, as kube-apiserver does; an apply (which must record its
// fields) or an object too large even without them is refused with 413, never a 500.
func TestObjectsTooLargeForStorage(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.applyCRD(t, blobCRD, "blobs.x.example.com")
	blobs := "/apis/x.example.com/v1/namespaces/default/blobs"
	// Fields with long names: their managedFields take as much room as they do.
	longNames := func(name string) string {
		var b strings.Builder
		fmt.Fprintf(&b, `{"apiVersion":"x.example.com/v1","kind":"Blob","metadata":{"name":%q},"spec":{"a":0`, name)
		for i := range 1600 {
			fmt.Fprintf(&b, `,"f%04d%s":1`, i, strings.Repeat("x", 1000))
		}
		b.WriteString("}}")
		return b.String()
	}
	// About 1.6 MB of fields, and as much again in managedFields: over etcd's 3 MiB together.
	a := l.request(t, "POST", blobs, longNames("big"))
	if a.code != 201 || strings.Contains(a.body, `"managedFields"`) {
		t.Errorf("create: %d %.300s", a.code, a.body)
	}
	a = l.request(t, "PATCH", blobs+"/big-apply?fieldManager=m", longNames("big-apply"), "Content-Type: application/apply-patch+yaml")
	if msg, reason := a.status(); a.code != 413 || reason != "RequestEntityTooLarge" || !strings.Contains(msg, "request is too large") {
		t.Errorf("apply: %d %.300s", a.code, a.body)
	}
	// Just under the 3 MiB body limit, but over etcd's limit once the server's metadata is in.
	head := `{"apiVersion":"x.example.com/v1","kind":"Blob","metadata":{"name":"huge"},"spec":{"s":"`
	huge := head + strings.Repeat("x", 3*1024*1024-len(head)-4) + `"}}`
	a = l.request(t, "POST", blobs, huge)
	if a.code != 413 {
		t.Errorf("create of an object storage cannot hold: %d %.300s", a.code, a.body)
	}
	l.fails(t, "", "get", "blob", "big-apply")
}

package handlers_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

func protobufConfigMap(t *testing.T, name string) string {
	t.Helper()
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Data:       map[string]string{"from": "protobuf"},
	}
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(cm, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func TestRequestBodies(t *testing.T) {
	f := newFixture(t)
	f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("existing", map[string]string{"k": "v"})})

	const (
		yamlCM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  from: yaml\n"
		// kube-apiserver lists the media types its serializer decodes for built-in types.
		unsupported = "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	)
	tests := []struct {
		name string
		call call
		want want
		// data, when set, is checked against the answer's data.from.
		data string
	}{
		{"POST malformed JSON", call{method: "POST", path: configMaps, body: `{"apiVersion":`},
			want{code: 400, reason: metav1.StatusReasonBadRequest, contains: "json parse error"}, ""},
		{"PUT malformed JSON", call{method: "PUT", path: configMaps + "/existing", body: `{"metadata":}`},
			want{code: 400, reason: metav1.StatusReasonBadRequest, contains: "json parse error"}, ""},
		{"PATCH malformed JSON", call{method: "PATCH", path: configMaps + "/existing", body: `{"data":`, headers: []string{"Content-Type: application/merge-patch+json"}},
			want{code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid JSON patch"}, ""},
		{"POST text/plain", call{method: "POST", path: configMaps, body: configMapJSON("plain", nil), headers: []string{"Content-Type: text/plain"}},
			want{code: 415, reason: metav1.StatusReasonUnsupportedMediaType, message: unsupported}, ""},
		{"PUT text/plain", call{method: "PUT", path: configMaps + "/existing", body: configMapJSON("existing", nil), headers: []string{"Content-Type: text/plain"}},
			want{code: 415, reason: metav1.StatusReasonUnsupportedMediaType, message: unsupported}, ""},
		{"POST text/plain to a custom resource", call{method: "POST", path: widgetsURL, body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}`, headers: []string{"Content-Type: text/plain"}},
			want{code: 415, reason: metav1.StatusReasonUnsupportedMediaType, message: "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"}, ""},
		{"POST YAML", call{method: "POST", path: configMaps, body: strings.ReplaceAll(yamlCM, "%s", "from-yaml"), headers: []string{"Content-Type: application/yaml"}},
			want{code: 201}, "yaml"},
		{"PUT YAML", call{method: "PUT", path: configMaps + "/existing", body: strings.ReplaceAll(yamlCM, "%s", "existing"), headers: []string{"Content-Type: application/yaml"}},
			want{code: 200}, "yaml"},
		{"POST Protobuf", call{method: "POST", path: configMaps, body: protobufConfigMap(t, "from-protobuf"), headers: []string{"Content-Type: application/vnd.kubernetes.protobuf"}},
			want{code: 201}, "protobuf"},
		{"POST a Secret to configmaps", call{method: "POST", path: configMaps, body: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`},
			want{code: 400, reason: metav1.StatusReasonBadRequest, contains: `Secret in version "v1" cannot be handled as a ConfigMap`}, ""},
		{"POST another group's apiVersion", call{method: "POST", path: configMaps, body: `{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"s"}}`},
			want{code: 400, reason: metav1.StatusReasonBadRequest, contains: "apps/v1"}, ""},
		{"PUT with another name", call{method: "PUT", path: configMaps + "/existing", body: configMapJSON("other", nil)},
			want{code: 400, reason: metav1.StatusReasonBadRequest, message: "the name of the object (other) does not match the name on the URL (existing)"}, ""},
		{"POST with a name in the path", call{method: "POST", path: configMaps + "/named", body: configMapJSON("named", nil)},
			want{code: 405, reason: metav1.StatusReasonMethodNotAllowed}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(tt.call)
			tt.want.check(t, r)
			if tt.data != "" {
				if got := nested(r.object(t), "data.from"); got != tt.data {
					t.Errorf("data.from = %q, want %q: %s", got, tt.data, r.body)
				}
			}
		})
	}
}

// TestBodyTooLarge calls the handler directly: over the network the server answers before the
// client has finished sending, which makes the client's view of the exchange racy.
func TestBodyTooLarge(t *testing.T) {
	f := newFixture(t)
	f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("existing", nil)})
	big := configMapJSON("big", map[string]string{"k": strings.Repeat("x", 3*1024*1024)})
	tests := []struct {
		name, method, path, contentType string
		// streamed hides the length, so the limit applies while reading.
		streamed bool
	}{
		{"POST", "POST", configMaps, "application/json", false},
		{"POST streamed", "POST", configMaps, "application/json", true},
		{"PUT", "PUT", configMaps + "/existing", "application/json", false},
		{"PATCH", "PATCH", configMaps + "/existing", "application/merge-patch+json", false},
		{"PATCH streamed", "PATCH", configMaps + "/existing", "application/merge-patch+json", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(big)
			if tt.streamed {
				body = io.MultiReader(body)
			}
			req := httptest.NewRequest(tt.method, tt.path, body)
			req.Header.Set("Content-Type", tt.contentType)
			if tt.streamed && req.ContentLength > 0 {
				t.Fatalf("length not hidden: %d", req.ContentLength)
			}
			want{code: 413, reason: metav1.StatusReasonRequestEntityTooLarge, message: "Request entity too large: limit is 3145728"}.check(t, f.serveDirect(req))
		})
	}
}

func TestFieldValidation(t *testing.T) {
	f := newFixture(t)
	f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("existing", nil)})
	const unknown = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s"},"x":1}`
	const duplicate = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s"},"data":{"a":"1"},"data":{"b":"2"}}`
	named := func(format, name string) string { return strings.ReplaceAll(format, "%s", name) }
	const strictPrefix = `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: `
	tests := []struct {
		name    string
		call    call
		want    want
		warning string // the Warning header expected, "" for none
	}{
		{"Strict unknown field", call{method: "POST", path: configMaps + "?fieldValidation=Strict", body: named(unknown, "a")},
			want{code: 400, reason: metav1.StatusReasonBadRequest, message: strictPrefix + `unknown field "x"`}, ""},
		{"unknown field warns by default", call{method: "POST", path: configMaps, body: named(unknown, "b")},
			want{code: 201}, `299 - "unknown field \"x\""`},
		{"Warn unknown field", call{method: "POST", path: configMaps + "?fieldValidation=Warn", body: named(unknown, "c")},
			want{code: 201}, `299 - "unknown field \"x\""`},
		{"Ignore unknown field", call{method: "POST", path: configMaps + "?fieldValidation=Ignore", body: named(unknown, "d")},
			want{code: 201}, ""},
		{"Strict duplicate field", call{method: "POST", path: configMaps + "?fieldValidation=Strict", body: named(duplicate, "e")},
			want{code: 400, reason: metav1.StatusReasonBadRequest, message: strictPrefix + `duplicate field "data"`}, ""},
		{"duplicate field warns by default", call{method: "POST", path: configMaps, body: named(duplicate, "f")},
			want{code: 201}, `299 - "duplicate field \"data\""`},
		{"Strict unknown field on PUT", call{method: "PUT", path: configMaps + "/existing?fieldValidation=Strict", body: named(unknown, "existing")},
			want{code: 400, reason: metav1.StatusReasonBadRequest, message: strictPrefix + `unknown field "x"`}, ""},
		{"unknown field warns on PUT", call{method: "PUT", path: configMaps + "/existing", body: named(unknown, "existing")},
			want{code: 200}, `299 - "unknown field \"x\""`},
		{"invalid fieldValidation", call{method: "POST", path: configMaps + "?fieldValidation=Bogus", body: configMapJSON("g", nil)},
			want{code: 422, reason: metav1.StatusReasonInvalid, message: `CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bogus": supported values: "", "Ignore", "Strict", "Warn"`}, ""},
		{"invalid fieldValidation on PUT", call{method: "PUT", path: configMaps + "/existing?fieldValidation=Bogus", body: configMapJSON("existing", nil)},
			want{code: 422, reason: metav1.StatusReasonInvalid, message: `UpdateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bogus": supported values: "", "Ignore", "Strict", "Warn"`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.do(tt.call)
			tt.want.check(t, r)
			checkWarnings(t, r, tt.warning)
			if r.code < 300 {
				if _, kept := r.object(t)["x"]; kept {
					t.Errorf("unknown field kept: %s", r.body)
				}
			}
		})
	}
}

func TestDryRun(t *testing.T) {
	f := newFixture(t)
	f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("existing", map[string]string{"k": "v"})})
	tests := []struct {
		name string
		call call
		want want
	}{
		{"create", call{method: "POST", path: configMaps + "?dryRun=All", body: configMapJSON("dry", nil)}, want{code: 201}},
		{"update", call{method: "PUT", path: configMaps + "/existing?dryRun=All", body: configMapJSON("existing", map[string]string{"k": "changed"})}, want{code: 200}},
		{"patch", call{method: "PATCH", path: configMaps + "/existing?dryRun=All", body: `{"data":{"k":"changed"}}`, headers: []string{"Content-Type: application/merge-patch+json"}}, want{code: 200}},
		{"delete", call{method: "DELETE", path: configMaps + "/existing?dryRun=All"}, want{code: 200}},
		{"deletecollection", call{method: "DELETE", path: configMaps + "?dryRun=All"}, want{code: 200}},
		{"create with a bogus dryRun", call{method: "POST", path: configMaps + "?dryRun=Bogus", body: configMapJSON("dry", nil)},
			want{code: 422, reason: metav1.StatusReasonInvalid, message: `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Bogus"]: supported values: "All"`}},
		{"patch with a bogus dryRun", call{method: "PATCH", path: configMaps + "/existing?dryRun=Bogus", body: `{}`, headers: []string{"Content-Type: application/merge-patch+json"}},
			want{code: 422, reason: metav1.StatusReasonInvalid, message: `PatchOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Bogus"]: supported values: "All"`}},
		{"delete with a bogus dryRun", call{method: "DELETE", path: configMaps + "/existing?dryRun=Bogus"},
			want{code: 422, reason: metav1.StatusReasonInvalid, message: `DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Bogus"]: supported values: "All"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.check(t, f.do(tt.call))
			// Nothing was written: dry is absent, existing unchanged.
			want{code: 404, reason: metav1.StatusReasonNotFound, message: `configmaps "dry" not found`}.check(t, f.do(call{method: "GET", path: configMaps + "/dry"}))
			if got := nested(f.must(200, call{method: "GET", path: configMaps + "/existing"}), "data.k"); got != "v" {
				t.Errorf("existing changed: data.k = %q", got)
			}
		})
	}
}

// TestBodyIdentity: kube-apiserver's answers to a body that does not name what the URL names —
// a PUT without a name or with another name or namespace, an apiVersion and kind its schemes
// do not know, or a known kind that is not the URL's — all 400, before anything is looked up.
func TestBodyIdentity(t *testing.T) {
	f := newFixture(t)
	created := f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("existing", nil)})
	const existing = configMaps + "/existing"
	tests := []struct {
		name    string
		call    call
		message string
	}{
		{"PUT without a name", call{method: "PUT", path: existing, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`},
			"the name of the object (existing based on URL) was undeterminable: name must be provided"},
		{"PUT without a name, of a missing object", call{method: "PUT", path: configMaps + "/missing", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`},
			"the name of the object (missing based on URL) was undeterminable: name must be provided"},
		{"PUT naming another object", call{method: "PUT", path: existing, body: configMapJSON("other", nil)},
			"the name of the object (other) does not match the name on the URL (existing)"},
		{"PUT naming another namespace", call{method: "PUT", path: existing, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"existing","namespace":"other"}}`},
			"the namespace of the provided object does not match the namespace sent on the request"},
		{"a version kube does not know", call{method: "POST", path: configMaps, body: `{"apiVersion":"v9","kind":"ConfigMap","metadata":{"name":"a"}}`},
			`ConfigMap in version "v9" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "v9" in scheme "pkg/runtime/scheme.go:111"`},
		{"a kind kube does not know", call{method: "POST", path: configMaps, body: `{"apiVersion":"v1","kind":"Gadget","metadata":{"name":"a"}}`},
			`Gadget in version "v1" cannot be handled as a ConfigMap: no kind "Gadget" is registered for version "v1" in scheme "pkg/runtime/scheme.go:111"`},
		{"a known kind of another group", call{method: "POST", path: configMaps, body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"a"}}`},
			`Scale in version "v1" cannot be handled as a ConfigMap: converting (v1.Scale) to (core.ConfigMap): unknown conversion`},
		{"the kind at another known version", call{method: "POST", path: configMaps, body: `{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"a"}}`},
			`ConfigMap in version "v1" cannot be handled as a ConfigMap: no kind "ConfigMap" is registered for version "apps/v1" in scheme "pkg/runtime/scheme.go:111"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want{code: 400, reason: metav1.StatusReasonBadRequest, message: tt.message}.check(t, f.do(tt.call))
		})
	}
	// Refused, none of them wrote.
	if got := f.must(200, call{method: "GET", path: existing}); nested(got, "metadata.resourceVersion") != nested(created, "metadata.resourceVersion") {
		t.Errorf("existing object written: %v", got)
	}
}

// A PUT whose object names another uid fails kube-apiserver's storage precondition: 409, in its
// storage's words, before the object is validated.
func TestPutWithAnotherUID(t *testing.T) {
	f := newFixture(t)
	created := f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: configMapJSON("held", nil)})
	uid := nested(created, "metadata.uid")
	r := f.do(call{method: "PUT", path: configMaps + "/held", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","uid":"other","resourceVersion":"1"},"data":{"bad key":"x"}}`})
	want{code: 409, reason: metav1.StatusReasonConflict, message: `Operation cannot be fulfilled on configmaps "held": StorageError: invalid object, Code: 4, Key: /registry/configmaps/default/held, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: other, UID in object meta: ` + uid}.check(t, r)
	f.must(http.StatusOK, call{method: "PUT", path: configMaps + "/held", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","uid":"` + uid + `"}}`})
}

// A generated name is kube's: the prefix cut to 58 characters, five random ones after it.
func TestGenerateNameTruncated(t *testing.T) {
	f := newFixture(t)
	prefix := strings.Repeat("a", 70)
	created := f.must(http.StatusCreated, call{method: "POST", path: configMaps, body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"` + prefix + `"}}`})
	if name := nested(created, "metadata.name"); len(name) != 63 || !strings.HasPrefix(name, prefix[:58]) {
		t.Errorf("generated name %q", name)
	}
}

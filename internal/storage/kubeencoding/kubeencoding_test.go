package kubeencoding

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
	"sigs.k8s.io/yaml"
)

func crdScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	apiextensionsinstall.Install(s)
	return s
}

func newValues(t *testing.T, mediaType string) *Values {
	t.Helper()
	v, err := New(mediaType, legacyscheme.Scheme, crdScheme())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// kubeProtobuf is obj as kube-apiserver stores it with its default --storage-media-type.
func kubeProtobuf(t *testing.T, s *runtime.Scheme, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(s, s).EncodeWithAllocator(obj, &buf, &runtime.SimpleAllocator{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// kubeJSON is obj as kube's JSON serializer writes it: fields in struct order, a newline.
func kubeJSON(t *testing.T, obj any) []byte {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

var created = metav1.Date(2026, 1, 2, 3, 4, 5, 0, metav1.Now().Location())

func configMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u-1", CreationTimestamp: created, Labels: map[string]string{"a": "b"}},
		Data:       map[string]string{"k": "v"},
	}
}

// lapisForm is what lapis's codec stores for the ConfigMap: apiVersion, kind, metadata first,
// then the rest, maps' keys sorted.
const lapisForm = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"creationTimestamp":"2026-01-02T03:04:05Z","labels":{"a":"b"},"name":"c","namespace":"ns","uid":"u-1"},"data":{"k":"v"}}`

func TestFromStorageReadsKubesEncodings(t *testing.T) {
	v := newValues(t, JSON)
	cmYAML, _ := yaml.Marshal(configMap())
	for _, tc := range []struct {
		name   string
		stored []byte
	}{
		{"lapis's own form", []byte(lapisForm)},
		{"Protobuf, kube-apiserver's default", kubeProtobuf(t, legacyscheme.Scheme, configMap())},
		{"JSON, --storage-media-type application/json", kubeJSON(t, configMap())},
		{"YAML, --storage-media-type application/yaml", cmYAML},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.FromStorage("/registry/configmaps/ns/c", tc.stored)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != lapisForm {
				t.Errorf("got  %s\nwant %s", got, lapisForm)
			}
		})
	}
}

func TestFromStorageLeavesLapisFormInPlace(t *testing.T) {
	stored := []byte(lapisForm + "\n")
	got, err := newValues(t, JSON).FromStorage("/registry/configmaps/ns/c", stored)
	if err != nil {
		t.Fatal(err)
	}
	if &got[0] != &stored[0] || len(got) != len(lapisForm) {
		t.Errorf("a value in lapis's form was copied or changed: %s", got)
	}
}

// An object an older kube-apiserver stored at a version 1.37 no longer stores at is defaulted
// and converted, as kube's storage decoder does.
func TestFromStorageConvertsOlderVersions(t *testing.T) {
	fs := &flowcontrolv1beta3.FlowSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: "flowcontrol.apiserver.k8s.io/v1beta3", Kind: "FlowSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: "f", UID: "u-2", CreationTimestamp: created},
		Spec:       flowcontrolv1beta3.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1beta3.PriorityLevelConfigurationReference{Name: "global-default"}},
	}
	v := newValues(t, JSON)
	for name, stored := range map[string][]byte{
		"Protobuf": kubeProtobuf(t, legacyscheme.Scheme, fs),
		"JSON":     kubeJSON(t, fs),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := v.FromStorage("/registry/flowschemas/f", stored)
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := json.Unmarshal(got, &obj); err != nil {
				t.Fatal(err)
			}
			if obj["apiVersion"] != "flowcontrol.apiserver.k8s.io/v1" {
				t.Errorf("apiVersion %v, want the storage version v1: %s", obj["apiVersion"], got)
			}
			// v1beta3's defaulting sets matchingPrecedence to 1000 when unset.
			if spec, _ := obj["spec"].(map[string]any); spec["matchingPrecedence"] != float64(1000) {
				t.Errorf("not defaulted as kube's storage decoder does: %s", got)
			}
		})
	}
}

func TestFromStorageRefusesWhatItCannotRead(t *testing.T) {
	v := newValues(t, JSON)
	for name, stored := range map[string]string{
		"garbage":             "not an object",
		"truncated JSON":      `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":`,
		"truncated Protobuf":  string(kubeProtobuf(t, legacyscheme.Scheme, configMap())[:20]),
		"an unknown Protobuf": "k8s\x00\x0a\x0c\x0a\x02v9\x12\x06Thingy",
		"encrypted":           "k8s:enc:aescbc:v1:key1:\x01\x02\x03",
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := v.FromStorage("/registry/configmaps/ns/c", []byte(stored)); err == nil {
				t.Errorf("read %q as %s", stored, got)
			}
		})
	}
}

func TestToStorageWritesTheMediaType(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "things.example.com", UID: "u-3", CreationTimestamp: created},
	}
	crdForm, err := newValues(t, JSON).FromStorage("k", kubeProtobuf(t, crdScheme(), crd)) // defaulted
	if err != nil {
		t.Fatal(err)
	}
	custom := `{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"t"},"spec":{"a":1}}`
	for _, tc := range []struct {
		mediaType, value, wantPrefix string
	}{
		{JSON, lapisForm, `{"apiVersion":"v1"`},
		{Protobuf, lapisForm, "k8s\x00"},
		{Protobuf, string(crdForm), "k8s\x00"},
		{Protobuf, custom, custom}, // custom resources stay JSON, as kube keeps them
		{YAML, lapisForm, "apiVersion: v1\n"},
		{YAML, custom, custom},
	} {
		t.Run(tc.mediaType+" "+tc.value[:40], func(t *testing.T) {
			v := newValues(t, tc.mediaType)
			stored, err := v.ToStorage("k", []byte(tc.value))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(stored), tc.wantPrefix) {
				t.Errorf("stored %q, want it to start %q", stored, tc.wantPrefix)
			}
			back, err := v.FromStorage("k", stored)
			if err != nil {
				t.Fatal(err)
			}
			if string(back) != tc.value {
				t.Errorf("read back %s\nwant        %s", back, tc.value)
			}
		})
	}
}

func TestNewRefusesUnknownMediaTypes(t *testing.T) {
	if _, err := New("application/cbor", legacyscheme.Scheme); err == nil {
		t.Error("application/cbor accepted")
	}
}

func TestStoredForm(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  bool
	}{
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}`, true},
		{`{"apiVersion":"g.io/v1","kind":"T","metadata":{"name":"x"},"spec":{}}`, true},
		{`{"kind":"ConfigMap","apiVersion":"v1","metadata":{}}`, false},
		{`{"apiVersion":"v1","data":{"metadata":{}},"kind":"ConfigMap","metadata":{}}`, false},
		{`{"apiVersion":"v\"1","kind":"ConfigMap","metadata":{}}`, false},
		{`{"apiVersion":"v1","kind":"ConfigMap"}`, false},
		{`{"apiVersion":"a/b/c","kind":"X","metadata":{}}`, false},
	} {
		if _, got := storedForm([]byte(tc.value)); got != tc.want {
			t.Errorf("storedForm(%s) = %v, want %v", tc.value, got, tc.want)
		}
	}
}

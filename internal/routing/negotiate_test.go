package routing

import "testing"

const (
	pb          = "application/vnd.kubernetes.protobuf"
	pbThenJSON  = pb + ", application/json"
	pbWatch     = pb + ";stream=watch"
	pbMetaList  = pb + ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
	pbTable     = pb + ";as=Table;g=meta.k8s.io;v=v1"
	jsonTable   = "application/json;as=Table;v=v1;g=meta.k8s.io"
	metadataCli = pb + ";as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
)

func TestNegotiateObject(t *testing.T) {
	tests := []struct {
		accept   string
		protobuf bool // the resource has a Protobuf form
		want     string
		ok       bool
	}{
		{"", true, JSON, true},
		{"application/json", true, JSON, true},
		{"application/yaml", false, YAML, true},
		{"*/*", true, JSON, true},
		{"application/*", true, JSON, true},
		{jsonTable + ",application/json", false, JSON, true},
		{jsonTable, false, "", false},
		{"text/html", true, "", false},
		// Protobuf, in the client's order, only for resources with a Go type.
		{pb, true, Protobuf, true},
		{pb, false, "", false},
		{pbThenJSON, true, Protobuf, true},
		{pbThenJSON, false, JSON, true},
		{"application/json, " + pb, true, JSON, true},
		{pbWatch, true, Protobuf, true},
		{pbMetaList + ", application/yaml", true, YAML, true},
		// kube's stream parameter: only stream=watch, and YAML has no watch framing.
		{"application/json;stream=watch", true, JSON, true},
		{"application/yaml;stream=watch, application/json", true, JSON, true},
		{pb + ";stream=other", true, "", false},
	}
	for _, tt := range tests {
		got, ok := NegotiateObject(tt.accept, tt.protobuf)
		if got != tt.want || ok != tt.ok {
			t.Errorf("NegotiateObject(%q, %v) = %q, %v; want %q, %v", tt.accept, tt.protobuf, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNegotiateRead(t *testing.T) {
	const kubectlTable = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	tests := []struct {
		accept   string
		list     bool
		protobuf bool
		want     Target
		ok       bool
	}{
		{"", false, true, Target{MediaType: JSON}, true},
		{kubectlTable, true, true, Target{MediaType: JSON, As: "Table", Version: "v1"}, true},
		{"application/json;as=Table;v=v1beta1;g=meta.k8s.io", false, false, Target{MediaType: JSON, As: "Table", Version: "v1beta1"}, true},
		{"application/json;as=Table;v=v2;g=meta.k8s.io,application/yaml", false, false, Target{MediaType: YAML}, true},
		{"application/json;as=Table;v=v1;g=example.com", false, false, Target{}, false},
		{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", true, false, Target{MediaType: JSON, As: "PartialObjectMetadataList", Version: "v1"}, true},
		{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", false, false, Target{}, false},
		{"text/plain", false, true, Target{}, false},
		// Protobuf objects and lists for resources with a Go type; JSON next for the others.
		{pb, false, true, Target{MediaType: Protobuf}, true},
		{pb, true, true, Target{MediaType: Protobuf}, true},
		{pb, false, false, Target{}, false},
		{pbThenJSON, true, false, Target{MediaType: JSON}, true},
		{pbWatch, true, true, Target{MediaType: Protobuf}, true},
		{pbWatch + ", application/json;stream=watch", true, false, Target{MediaType: JSON}, true},
		// Metadata in Protobuf for every resource (kube's metadata client relies on it).
		{pbMetaList, true, false, Target{MediaType: Protobuf, As: "PartialObjectMetadataList", Version: "v1"}, true},
		{pb + ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1", true, true, Target{MediaType: Protobuf, As: "PartialObjectMetadataList", Version: "v1beta1"}, true},
		{metadataCli, false, false, Target{MediaType: Protobuf, As: "PartialObjectMetadata", Version: "v1"}, true},
		// Tables only in JSON and YAML, as kube-apiserver serves them.
		{pbTable, false, true, Target{}, false},
		{pbTable + ", " + jsonTable, true, true, Target{MediaType: JSON, As: "Table", Version: "v1"}, true},
		{pbTable + ", " + pb, true, true, Target{MediaType: Protobuf}, true},
	}
	for _, tt := range tests {
		got, ok := NegotiateRead(tt.accept, tt.list, tt.protobuf)
		if got != tt.want || ok != tt.ok {
			t.Errorf("NegotiateRead(%q, %v, %v) = %+v, %v; want %+v, %v", tt.accept, tt.list, tt.protobuf, got, ok, tt.want, tt.ok)
		}
	}
}

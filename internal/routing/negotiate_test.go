package routing

import "testing"

func TestNegotiateObject(t *testing.T) {
	tests := []struct {
		accept string
		want   string
		ok     bool
	}{
		{"", JSON, true},
		{"application/json", JSON, true},
		{"application/yaml", YAML, true},
		{"*/*", JSON, true},
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", JSON, true},
		{"application/json;as=Table;v=v1;g=meta.k8s.io", "", false},
		{"text/html", "", false},
	}
	for _, tt := range tests {
		got, ok := NegotiateObject(tt.accept)
		if got != tt.want || ok != tt.ok {
			t.Errorf("NegotiateObject(%q) = %q, %v; want %q, %v", tt.accept, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNegotiateRead(t *testing.T) {
	const kubectlTable = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
	tests := []struct {
		accept string
		list   bool
		want   Target
		ok     bool
	}{
		{"", false, Target{MediaType: JSON}, true},
		{kubectlTable, true, Target{MediaType: JSON, As: "Table", Version: "v1"}, true},
		{"application/json;as=Table;v=v1beta1;g=meta.k8s.io", false, Target{MediaType: JSON, As: "Table", Version: "v1beta1"}, true},
		{"application/json;as=Table;v=v2;g=meta.k8s.io,application/yaml", false, Target{MediaType: YAML}, true},
		{"application/json;as=Table;v=v1;g=example.com", false, Target{}, false},
		{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", true, Target{MediaType: JSON, As: "PartialObjectMetadataList", Version: "v1"}, true},
		{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", false, Target{}, false},
		{"text/plain", false, Target{}, false},
	}
	for _, tt := range tests {
		got, ok := NegotiateRead(tt.accept, tt.list)
		if got != tt.want || ok != tt.ok {
			t.Errorf("NegotiateRead(%q, %v) = %+v, %v; want %+v, %v", tt.accept, tt.list, got, ok, tt.want, tt.ok)
		}
	}
}

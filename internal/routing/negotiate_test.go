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

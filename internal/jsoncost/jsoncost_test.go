package jsoncost

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func nested(levels int) string {
	return strings.Repeat(`{"a":`, levels) + "1" + strings.Repeat("}", levels)
}

func TestMeasure(t *testing.T) {
	cases := []struct {
		name   string
		json   string
		depth  int
		nested int64
	}{
		{"scalar", `"x"`, 0, 0},
		{"empty object", `{}`, 1, 2},
		{"flat", `{"a":1,"b":"c"}`, 1, 15},
		{"nested arrays", `{"a":[[1,2],[3]]}`, 3, 17 + 11 + 5 + 3},
		{"brackets inside strings", `{"a":"{[{[","b":"\"{"}`, 1, 22},
		{"escaped backslash before quote", `{"a":"\\","b":{}}`, 2, 17 + 2},
		{"deep", nested(500), 500, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !json.Valid([]byte(c.json)) {
				t.Fatalf("test case is not JSON")
			}
			shape := Measure([]byte(c.json))
			if shape.Depth != c.depth {
				t.Errorf("depth %d, want %d", shape.Depth, c.depth)
			}
			if c.nested != 0 && shape.NestedBytes != c.nested {
				t.Errorf("nested bytes %d, want %d", shape.NestedBytes, c.nested)
			}
		})
	}
}

// The estimate must follow the real YAML's size: close for ordinary documents, and growing
// with the square of the depth for deep ones.
func TestBlockYAMLSizeFollowsYAML(t *testing.T) {
	for _, doc := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"a":"b","c":"d"}},"data":{"k":"v","k2":"v2"}}`,
		`{"spec":{"containers":[{"name":"a","ports":[{"containerPort":80},{"containerPort":443}]}]}}`,
		nested(50),
		nested(400),
	} {
		y, err := yaml.JSONToYAML([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		est := Measure([]byte(doc)).BlockYAMLSize
		if est < len(y)/2 || est > 2*len(y)+len(doc) {
			t.Errorf("estimate %d for YAML of %d bytes (JSON %d)", est, len(y), len(doc))
		}
	}
}

// NestedBytes grows with the square of the depth for a chain, linearly with size for flat data.
func TestNestedBytesGrowth(t *testing.T) {
	chain := func(levels int) int64 { return Measure([]byte(nested(levels))).NestedBytes }
	if r := float64(chain(2000)) / float64(chain(1000)); r < 3.5 || r > 4.5 {
		t.Errorf("doubling the depth multiplied nested bytes by %.1f, want about 4", r)
	}
	flat := func(n int) int64 {
		return Measure([]byte(`{"a":"` + strings.Repeat("x", n) + `"}`)).NestedBytes
	}
	if r := float64(flat(20000)) / float64(flat(10000)); r < 1.9 || r > 2.1 {
		t.Errorf("doubling a flat document multiplied nested bytes by %.1f, want about 2", r)
	}
}

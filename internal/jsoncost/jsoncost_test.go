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
		name  string
		json  string
		depth int
	}{
		{"scalar", `"x"`, 0},
		{"empty object", `{}`, 1},
		{"flat", `{"a":1,"b":"c"}`, 1},
		{"nested arrays", `{"a":[[1,2],[3]]}`, 3},
		{"brackets inside strings", `{"a":"{[{[","b":"\"{"}`, 1},
		{"escaped backslash before quote", `{"a":"\\","b":{}}`, 2},
		{"deep", nested(500), 500},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !json.Valid([]byte(c.json)) {
				t.Fatalf("test case is not JSON")
			}
			if got := Measure([]byte(c.json)).Depth; got != c.depth {
				t.Errorf("depth %d, want %d", got, c.depth)
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

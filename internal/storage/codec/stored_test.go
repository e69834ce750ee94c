package codec

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestEncodeLayoutAndSplice(t *testing.T) {
	tests := []struct {
		name string
		obj  map[string]any
		want string
	}{
		{
			name: "configmap",
			obj: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"a": "b"},
				"metadata": map[string]any{"name": "x", "resourceVersion": "7"}},
			want: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"resourceVersion":"42","name":"x"},"data":{"a":"b"}}`,
		},
		{
			name: "empty metadata and no body",
			obj:  map[string]any{"apiVersion": "example.com/v1", "kind": "W"},
			want: `{"apiVersion":"example.com/v1","kind":"W","metadata":{"resourceVersion":"42"}}`,
		},
		{
			name: "strings that look like the layout",
			obj: map[string]any{"apiVersion": "v1", "kind": `K","metadata":{`,
				"metadata": map[string]any{"name": `,"metadata":{`}},
			want: `{"apiVersion":"v1","kind":"K\",\"metadata\":{","metadata":{"resourceVersion":"42","name":",\"metadata\":{"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			value, err := Encode(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := WithResourceVersion(value, 42, tt.obj["apiVersion"].(string))
			if !ok || string(got) != tt.want {
				t.Fatalf("got %s (%v), want %s", got, ok, tt.want)
			}
			var a, b map[string]any
			if err := json.Unmarshal(got, &a); err != nil {
				t.Fatal(err)
			}
			dec, err := Decode(value, 42)
			if err != nil {
				t.Fatal(err)
			}
			b = dec.Object
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("splice %v != decode %v", a, b)
			}
		})
	}
}

func TestWithResourceVersionOtherVersion(t *testing.T) {
	value, _ := Encode(map[string]any{"apiVersion": "example.com/v1", "kind": "W"})
	for _, v := range []string{"example.com/v2", "example.com/v", "example.com/v10"} {
		if _, ok := WithResourceVersion(value, 1, v); ok {
			t.Errorf("spliced for %s", v)
		}
	}
}

func TestEncodeDoesNotModify(t *testing.T) {
	meta := map[string]any{"name": "x", "resourceVersion": "3"}
	if _, err := Encode(map[string]any{"apiVersion": "v1", "kind": "K", "metadata": meta}); err != nil {
		t.Fatal(err)
	}
	if meta["resourceVersion"] != "3" {
		t.Fatal("Encode modified its input")
	}
}

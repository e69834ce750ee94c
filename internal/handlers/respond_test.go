package handlers

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestWithoutTypeMeta(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"kind":"x"}}`, `{"metadata":{"name":"a"},"data":{"kind":"x"}}`},
		{`{"apiVersion":"apps/v1","data":{},"kind":"Deployment","metadata":{}}`, `{"data":{},"metadata":{}}`},
		{`{"kind":"Pod","metadata":{}}`, `{"metadata":{}}`},
		{`{"metadata":{}}`, `{"metadata":{}}`},
	} {
		var got, want any
		out := withoutTypeMeta([]byte(c.in))
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		_ = json.Unmarshal([]byte(c.want), &want)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %s, want %s", c.in, out, c.want)
		}
	}
}

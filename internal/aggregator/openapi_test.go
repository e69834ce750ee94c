package aggregator

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
)

// openAPIServer is a stand-in extension server's OpenAPI: a v3 discovery document whose hash
// can change, and a v2 document with a path of its APIService's group version and one of
// another.
type openAPIServer struct{ hash atomic.Value }

func (o *openAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/openapi/v3":
		fmt.Fprintf(w, `{"paths":{"apis/wardle.example.com/v1alpha1":{"serverRelativeURL":"/openapi/v3/apis/wardle.example.com/v1alpha1?hash=%s"}}}`, o.hash.Load())
	case "/openapi/v2":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"swagger":"2.0","info":{"title":"wardle","version":"v0"},"paths":{`+
			`"/apis/wardle.example.com/v1alpha1/flunders":{"get":{"responses":{"200":{"description":"OK","schema":{"$ref":"#/definitions/Flunder"}}}}},`+
			`"/apis/wardle.example.com/v1beta1/flunders":{"get":{"responses":{"200":{"description":"OK","schema":{"$ref":"#/definitions/FlunderB"}}}}}},`+
			`"definitions":{"Flunder":{"type":"object"},"FlunderB":{"type":"object"}}}`)
	case "/openapi/v3/apis/wardle.example.com/v1alpha1":
		fmt.Fprint(w, `{"openapi":"3.0.0"}`)
	default:
		http.NotFound(w, r)
	}
}

// TestOpenAPIDocs: an extension server's v3 group versions are listed and proxied, only its
// APIService's group version's v2 paths are merged, and the documents' revision moves only
// when what was downloaded changed.
func TestOpenAPIDocs(t *testing.T) {
	server := &openAPIServer{}
	server.hash.Store("A")
	o := newOpenAPIDocs()
	o.add(wardle(443, true), server)
	if err := o.sync("v1alpha1.wardle.example.com"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"apis/wardle.example.com/v1alpha1": "/openapi/v3/apis/wardle.example.com/v1alpha1?hash=A"}
	if got := o.V3Paths(); !reflect.DeepEqual(got, want) {
		t.Errorf("v3 paths %v, want %v", got, want)
	}
	v2 := o.V2()
	if len(v2) != 1 || len(v2[0].Paths.Paths) != 1 || v2[0].Paths.Paths["/apis/wardle.example.com/v1alpha1/flunders"].Get == nil ||
		len(v2[0].Definitions) != 1 {
		t.Errorf("v2 documents %+v, want the v1alpha1 path and its definition only", v2)
	}
	rec := httptest.NewRecorder()
	if !o.ServeV3(rec, httptest.NewRequest("GET", "/openapi/v3/apis/wardle.example.com/v1alpha1?hash=A", nil)) || rec.Body.String() != `{"openapi":"3.0.0"}` {
		t.Errorf("v3 document not proxied: %q", rec.Body)
	}
	if o.ServeV3(httptest.NewRecorder(), httptest.NewRequest("GET", "/openapi/v3/apis/apps/v1", nil)) {
		t.Error("a group version no extension server has was served")
	}

	rev := o.Revision()
	if err := o.sync("v1alpha1.wardle.example.com"); err != nil || o.Revision() != rev {
		t.Errorf("an unchanged download moved the revision (%v)", err)
	}
	server.hash.Store("B")
	if err := o.sync("v1alpha1.wardle.example.com"); err != nil || o.Revision() == rev {
		t.Errorf("a changed v3 document did not move the revision (%v)", err)
	}
	o.remove("v1alpha1.wardle.example.com")
	if len(o.V3Paths()) != 0 || len(o.V2()) != 0 {
		t.Error("a removed APIService's documents are still listed")
	}
}

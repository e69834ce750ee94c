package sharedetcd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// sideBySideResources are what the informers of the side-by-side check follow.
var sideBySideResources = []schema.GroupVersionResource{
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "services"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "sd.example.com", Version: "v1", Resource: "widgets"},
}

// informers follows sideBySideResources on s until ctx ends.
type informers struct {
	server *server
	stores map[schema.GroupVersionResource]cache.Store
	synced []cache.InformerSynced
}

func startInformers(ctx context.Context, s *server) *informers {
	factory := dynamicinformer.NewDynamicSharedInformerFactory(s.dyn, 0)
	in := &informers{server: s, stores: map[schema.GroupVersionResource]cache.Store{}}
	for _, gvr := range sideBySideResources {
		inf := factory.ForResource(gvr).Informer()
		in.stores[gvr] = inf.GetStore()
		in.synced = append(in.synced, inf.HasSynced)
	}
	factory.Start(ctx.Done())
	return in
}

// state is each followed object's resourceVersion, by resource and objectKey.
func (in *informers) state() map[string]string {
	st := map[string]string{}
	for gvr, store := range in.stores {
		for _, o := range store.List() {
			u := o.(*unstructured.Unstructured)
			st[gvr.Resource+" "+cache.MetaObjectToName(u).String()] = u.GetResourceVersion()
		}
	}
	return st
}

// checkInformersConverge writes through each server and checks that an informer on each
// converges to the same objects at the same resourceVersions, those writes included.
func checkInformersConverge(t *testing.T, kube, lapis *server) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	onKube, onLapis := startInformers(ctx, kube), startInformers(ctx, lapis)
	for _, in := range []*informers{onKube, onLapis} {
		sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
		ok := cache.WaitForCacheSync(sctx.Done(), in.synced...)
		scancel()
		if !ok {
			t.Fatalf("informers on %s did not sync within 30 s", in.server.name)
		}
	}
	writeSideBySide(t, kube, lapis)
	var last string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		k, l := onKube.state(), onLapis.state()
		if reflect.DeepEqual(k, l) && k["configmaps sd/sd-side-kube"] != "" && k["configmaps sd/sd-side-lapis"] != "" &&
			k["configmaps sd/sd-side-kube"] == resourceVersionOf(t, lapis, "/api/v1/namespaces/sd/configmaps/sd-side-kube") {
			return
		}
		last = stateDiff(k, l)
	}
	t.Errorf("informers on kube-apiserver and lapis did not converge within 20 s; kube-apiserver's → lapis's:\n\t%s", last)
}

// writeSideBySide creates a ConfigMap through each server and labels each through the other.
func writeSideBySide(t *testing.T, kube, lapis *server) {
	t.Helper()
	for _, w := range []struct {
		s    *server
		name string
	}{{kube, "sd-side-kube"}, {lapis, "sd-side-lapis"}} {
		w.s.must(t, "POST", "/api/v1/namespaces/sd/configmaps?fieldManager="+fieldOwner, jsonType,
			[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+w.name+`"},"data":{"by":"`+w.s.name+`"}}`), http.StatusCreated)
	}
	for _, w := range []struct {
		s    *server
		name string
	}{{lapis, "sd-side-kube"}, {kube, "sd-side-lapis"}} {
		w.s.must(t, "PATCH", "/api/v1/namespaces/sd/configmaps/"+w.name+"?fieldManager="+fieldOwner, mergeType,
			[]byte(`{"metadata":{"labels":{"labelled-by":"`+w.s.name+`"}}}`), http.StatusOK)
	}
}

func resourceVersionOf(t *testing.T, s *server, path string) string {
	t.Helper()
	o, _ := decode(s.must(t, "GET", path, "", nil, http.StatusOK).body).(map[string]any)
	md, _ := o["metadata"].(map[string]any)
	rv, _ := md["resourceVersion"].(string)
	return rv
}

// stateDiff lists the objects whose resourceVersions two informer states disagree on.
func stateDiff(a, b map[string]string) string {
	var lines []string
	for k, v := range a {
		if b[k] != v {
			lines = append(lines, fmt.Sprintf("%s: %q → %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			lines = append(lines, fmt.Sprintf("%s: absent → %q", k, v))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n\t")
}

// The applies of checkApplyConflict: sd-left sets data.x; sd-right then sets data.x to another
// value (a conflict), sets data.y only (merged), and forces data.x (taking it over).
var (
	leftApply     = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME","namespace":"sd"},"data":{"x":"1"}}`
	rightConflict = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME","namespace":"sd"},"data":{"x":"2"}}`
	rightMerge    = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"NAME","namespace":"sd"},"data":{"y":"2"}}`
)

// applyRound is what one round of applies gave: the conflict's Status, and the object after
// the merge and after the forced apply (managedFields without their times, data).
type applyRound struct {
	conflict      any
	merged, owned any
}

// runApplies applies as sd-left through first and as sd-right through second, on NAME.
func runApplies(t *testing.T, first, second *server, name string) applyRound {
	t.Helper()
	body := func(s string) string { return strings.ReplaceAll(s, "NAME", name) }
	path := "/api/v1/namespaces/sd/configmaps/" + name
	apply{manager: "sd-left", path: path, body: body(leftApply)}.send(t, first, http.StatusCreated)
	var r applyRound
	conflict := apply{manager: "sd-right", path: path, body: body(rightConflict)}.send(t, second, http.StatusConflict)
	r.conflict = decode([]byte(strings.ReplaceAll(string(conflict.body), name, "NAME")))
	r.merged = ownership(apply{manager: "sd-right", path: path, body: body(rightMerge)}.send(t, second, http.StatusOK))
	r.owned = ownership(apply{manager: "sd-right", path: path, body: body(rightConflict), force: true}.send(t, second, http.StatusOK))
	if d := diff(r.owned, ownership(first.must(t, "GET", path, "", nil, http.StatusOK)), 10); len(d) > 0 {
		t.Errorf("%s after the forced apply through %s: %s serves it otherwise:\n\t%s", name, second.name, first.name, strings.Join(d, "\n\t"))
	}
	return r
}

// ownership is an object's data and managedFields, without the entries' times.
func ownership(a answer) any {
	o, _ := decode(a.body).(map[string]any)
	md, _ := o["metadata"].(map[string]any)
	var fields []any
	mf, _ := md["managedFields"].([]any)
	for _, e := range mf {
		if m, ok := e.(map[string]any); ok {
			fields = append(fields, without(m, "time"))
		}
	}
	return map[string]any{"data": o["data"], "managedFields": fields}
}

// checkApplyConflict runs the same applies on one server (kube-apiserver) and across the two
// (sd-left through kube-apiserver, sd-right through lapis): the conflict, the merge and the
// forced apply must come out the same.
func checkApplyConflict(t *testing.T, kube, lapis *server) {
	t.Helper()
	single := runApplies(t, kube, kube, "sd-side-single")
	across := runApplies(t, kube, lapis, "sd-side-across")
	for _, c := range []struct {
		what      string
		one, both any
	}{
		{"the conflicting apply's answer (409)", single.conflict, across.conflict},
		{"the merged object", single.merged, across.merged},
		{"the object after the forced apply", single.owned, across.owned},
	} {
		if d := diff(c.one, c.both, 10); len(d) > 0 {
			t.Errorf("%s: one server (kube-apiserver) → across kube-apiserver and lapis:\n\t%s", c.what, strings.Join(d, "\n\t"))
		}
	}
}

// checkBothEndpoints waits (20 s: kube reconciles every 10 s) for the kubernetes Service's
// Endpoints to list both servers' advertised addresses on both servers, as two
// kube-apiservers' lease reconcilers keep them, then watches it for stableFor: two such
// reconcilers leave it alone, each finding its own address and the other's master lease.
func checkBothEndpoints(t *testing.T, servers []*server, addresses []string) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		if last = endpointsDisagree(t, servers, addresses); last == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the kubernetes Service's Endpoints should list %q (both servers') within 20 s; last: %s", addresses, last)
			return
		}
	}
	var changes []string
	seen := ""
	for deadline := time.Now().Add(stableFor); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if d := endpointsDisagree(t, servers, addresses); d != seen {
			seen = d
			if d == "" {
				d = "both servers serve both addresses again"
			}
			changes = append(changes, time.Now().Format("15:04:05.000")+" "+d)
		}
	}
	if len(changes) > 0 {
		t.Errorf("the kubernetes Service's Endpoints listed %q, then changed within %v (the servers' reconcilers disagree):\n\t%s", addresses, stableFor, strings.Join(changes, "\n\t"))
	}
}

// stableFor is how long the side-by-side Endpoints must stay as they are: longer than kube's
// endpoint reconciliation interval (10 s).
const stableFor = 11 * time.Second

// endpointsDisagree says which server serves the kubernetes Service's Endpoints with other
// addresses than addresses (sorted), or "".
func endpointsDisagree(t *testing.T, servers []*server, addresses []string) string {
	t.Helper()
	for _, s := range servers {
		var ep struct {
			Subsets []struct{ Addresses []struct{ IP string } }
		}
		a := s.do(t, "GET", "/api/v1/namespaces/default/endpoints/kubernetes", "", "", nil)
		_ = json.Unmarshal(a.body, &ep)
		var ips []string
		for _, ss := range ep.Subsets {
			for _, ad := range ss.Addresses {
				ips = append(ips, ad.IP)
			}
		}
		slices.Sort(ips)
		if !slices.Equal(ips, addresses) {
			return fmt.Sprintf("%s serves addresses %q", s.name, ips)
		}
	}
	return ""
}

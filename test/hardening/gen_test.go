package hardening

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// The media types a request may carry or ask for.
const (
	mJSON  = "application/json"
	mYAML  = "application/yaml"
	mProto = "application/vnd.kubernetes.protobuf"
	mJSONP = "application/json-patch+json"
	mMerge = "application/merge-patch+json"
	mSMP   = "application/strategic-merge-patch+json"
	mApply = "application/apply-patch+yaml"
)

// Namespaces and names the load uses: main ones the setup creates, a scratch namespace that
// may come and go, and ones that never exist or are invalid. Small pools keep the store small
// and make requests meet the objects earlier requests created.
var (
	mainNamespaces = []string{"hz-a", "hz-b"}
	scratchNS      = "hz-x"
	objectNames    = []string{"n0", "n1", "n2", "n3"}
	badNames       = []string{"UPPER", "a..b", "-x", "a%2Fb", "%C3%BC", strings.Repeat("l", 300), "a_b", ".", "..", "%20"}
	scratchLabel   = "hz=scratch"
)

// kind is one resource the load targets.
type kind struct {
	group, version, resource, kind string
	namespaced                     bool
	subs                           []string
	builtin                        bool // has a Go type: Protobuf and strategic merge patch apply
	// names are the object names requests use; deletable are those DELETE may name (the main
	// namespaces and CRDs stay, or the load would mostly meet their absence).
	names, deletable []string
	sample           func(r *rand.Rand, ns, name string) map[string]any
}

func (k *kind) apiVersion() string {
	if k.group == "" {
		return k.version
	}
	return k.group + "/" + k.version
}

func (k *kind) prefix() string {
	if k.group == "" {
		return "/api/" + k.version
	}
	return "/apis/" + k.group + "/" + k.version
}

const (
	crGroup     = "hardening.lapis.dev"
	widgetsCRD  = "widgets." + crGroup
	gadgetsCRD  = "gadgets." + crGroup
	scratchCRD  = "things.fuzz.lapis.dev"
	scratchCRD2 = "gizmos.fuzz.lapis.dev"
)

var kinds = []*kind{
	{version: "v1", resource: "namespaces", kind: "Namespace", subs: []string{"status", "finalize"}, builtin: true,
		names: []string{"hz-a", "hz-b", scratchNS, "hz-y"}, deletable: []string{scratchNS, "hz-y"},
		sample: func(r *rand.Rand, _, name string) map[string]any {
			return obj("v1", "Namespace", "", name, map[string]any{"spec": map[string]any{"finalizers": []any{"kubernetes"}}}, true)
		}},
	{version: "v1", resource: "configmaps", kind: "ConfigMap", namespaced: true, builtin: true,
		sample: func(r *rand.Rand, ns, name string) map[string]any {
			data := map[string]any{}
			for i := range r.IntN(4) {
				data[fmt.Sprintf("k%d", i)] = randString(r, 1+r.IntN(40))
			}
			return obj("v1", "ConfigMap", ns, name, map[string]any{"data": data}, false)
		}},
	{version: "v1", resource: "secrets", kind: "Secret", namespaced: true, builtin: true,
		sample: func(r *rand.Rand, ns, name string) map[string]any {
			return obj("v1", "Secret", ns, name, map[string]any{"type": "Opaque",
				"data":       map[string]any{"a": base64.StdEncoding.EncodeToString([]byte(randString(r, 10)))},
				"stringData": map[string]any{"b": randString(r, 5)}}, false)
		}},
	{version: "v1", resource: "serviceaccounts", kind: "ServiceAccount", namespaced: true, builtin: true,
		sample: func(r *rand.Rand, ns, name string) map[string]any {
			return obj("v1", "ServiceAccount", ns, name, map[string]any{
				"secrets":                      []any{map[string]any{"name": "s1"}, map[string]any{"name": "s2"}},
				"imagePullSecrets":             []any{map[string]any{"name": "p1"}},
				"automountServiceAccountToken": r.IntN(2) == 0}, false)
		}},
	{version: "v1", resource: "events", kind: "Event", namespaced: true, builtin: true,
		sample: func(r *rand.Rand, ns, name string) map[string]any {
			return obj("v1", "Event", ns, name, map[string]any{
				"involvedObject": map[string]any{"kind": "ConfigMap", "name": "n0", "namespace": ns},
				"reason":         "Fuzzed", "message": randString(r, 20), "type": "Normal", "count": r.IntN(5),
				"firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:00:01Z",
				"source": map[string]any{"component": "hardening"}}, false)
		}},
	{group: "events.k8s.io", version: "v1", resource: "events", kind: "Event", namespaced: true, builtin: true,
		sample: func(r *rand.Rand, ns, name string) map[string]any {
			return obj("events.k8s.io/v1", "Event", ns, name, map[string]any{
				"eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "lapis.dev/hardening",
				"reportingInstance": "i1", "action": "Fuzz", "reason": "Fuzzed", "type": "Warning",
				"note": randString(r, 20), "regarding": map[string]any{"kind": "ConfigMap", "name": "n1", "namespace": ns}}, false)
		}},
	{group: "coordination.k8s.io", version: "v1", resource: "leases", kind: "Lease", namespaced: true, builtin: true,
		sample: func(r *rand.Rand, ns, name string) map[string]any {
			return obj("coordination.k8s.io/v1", "Lease", ns, name, map[string]any{"spec": map[string]any{
				"holderIdentity": randString(r, 8), "leaseDurationSeconds": r.IntN(100),
				"renewTime": "2024-01-01T00:00:00.000000Z", "leaseTransitions": r.IntN(3)}}, false)
		}},
	{group: "apiextensions.k8s.io", version: "v1", resource: "customresourcedefinitions", kind: "CustomResourceDefinition",
		subs: []string{"status"}, builtin: true,
		names: []string{widgetsCRD, gadgetsCRD, scratchCRD, scratchCRD2, "nodot"}, deletable: []string{scratchCRD, scratchCRD2, "nodot"},
		sample: func(r *rand.Rand, _, name string) map[string]any {
			plural, group, _ := strings.Cut(name, ".")
			return crd(name, plural, group, "Scratch"+strconv.Itoa(r.IntN(3)), r.IntN(2) == 0, true)
		}},
	{group: crGroup, version: "v1", resource: "widgets", kind: "Widget", namespaced: true, subs: []string{"status", "scale"},
		sample: func(r *rand.Rand, ns, name string) map[string]any {
			return obj(crGroup+"/v1", "Widget", ns, name, map[string]any{
				"spec":   map[string]any{"replicas": r.IntN(5), "selector": "app=w", "color": randString(r, 6), "free": map[string]any{"x": 1}},
				"status": map[string]any{"replicas": r.IntN(5)}}, false)
		}},
	{group: crGroup, version: "v1", resource: "gadgets", kind: "Gadget", subs: []string{"status"},
		names: []string{"g0", "g1", "g2", "g3"}, deletable: []string{"g0", "g1", "g2", "g3"},
		sample: func(r *rand.Rand, _, name string) map[string]any {
			return obj(crGroup+"/v1", "Gadget", "", name, map[string]any{
				"spec": map[string]any{"size": r.IntN(10), "color": []string{"red", "blue"}[r.IntN(2)],
					"items": []any{map[string]any{"name": "a", "value": "1"}, map[string]any{"name": "b", "value": "2"}}},
				"status": map[string]any{"ok": true}}, false)
		}},
}

func obj(apiVersion, kind, ns, name string, fields map[string]any, scratch bool) map[string]any {
	meta := map[string]any{"name": name, "labels": map[string]any{"app": "hz"}}
	if scratch {
		meta["labels"] = map[string]any{"hz": "scratch"}
	}
	if ns != "" {
		meta["namespace"] = ns
	}
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
	for k, v := range fields {
		o[k] = v
	}
	return o
}

// crd is a CustomResourceDefinition with status (and, when scale, scale) subresources.
// preserve keeps unknown fields in spec; otherwise the schema is closed and lists are maps.
func crd(name, plural, group, kindName string, namespaced, scratch bool) map[string]any {
	scope := "Cluster"
	if namespaced {
		scope = "Namespaced"
	}
	spec := map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true,
		"properties": map[string]any{"replicas": map[string]any{"type": "integer"}, "selector": map[string]any{"type": "string"}}}
	if !namespaced {
		spec = map[string]any{"type": "object", "properties": map[string]any{
			"size":  map[string]any{"type": "integer", "minimum": 0},
			"color": map[string]any{"type": "string", "enum": []any{"red", "blue"}},
			"items": map[string]any{"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": []any{"name"},
				"items": map[string]any{"type": "object", "required": []any{"name"}, "properties": map[string]any{
					"name": map[string]any{"type": "string"}, "value": map[string]any{"type": "string"}}}}}}
	}
	subs := map[string]any{"status": map[string]any{}}
	if namespaced {
		subs["scale"] = map[string]any{"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".spec.selector"}
	}
	return obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", name, map[string]any{"spec": map[string]any{
		"group": group, "scope": scope,
		"names": map[string]any{"plural": plural, "singular": strings.TrimSuffix(plural, "s"), "kind": kindName, "listKind": kindName + "List"},
		"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true, "subresources": subs,
			"additionalPrinterColumns": []any{map[string]any{"name": "Spec", "type": "string", "jsonPath": ".spec"}},
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
				"spec": spec, "status": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}}, scratch)
}

// fuzzReq is one generated request, kept to report it when it fails.
type fuzzReq struct {
	method, path, query string
	contentType, accept string
	body                []byte
	verb, resource, sub string
	watch               bool
	watchTimeout        int    // seconds the watch may stay open (for timeoutSeconds > 0)
	note                string // how the generator made it

	kind     *kind // what a resource verb targets, if it does
	ns, name string
}

// missing queues a plain create of the object q found missing, in a main namespace.
func (g *gen) missing(q *fuzzReq) {
	k := q.kind
	if k == nil || q.name == "" || (k.namespaced && q.ns != mainNamespaces[0] && q.ns != mainNamespaces[1]) {
		return
	}
	path := k.prefix() + "/" + k.resource
	if k.namespaced {
		path = k.prefix() + "/namespaces/" + q.ns + "/" + k.resource
	}
	g.recreate = &fuzzReq{method: "POST", path: path, verb: "create", resource: k.resource, kind: k, ns: q.ns, name: q.name,
		contentType: mJSON, accept: mJSON, body: mustJSON(k.sample(g.r, q.ns, q.name)), note: "re-create of a missing object"}
}

func (q *fuzzReq) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", q.method, q.path)
	if q.query != "" {
		fmt.Fprintf(&b, "?%s", truncate(q.query, 400))
	}
	fmt.Fprintf(&b, "\n    Content-Type: %q Accept: %q  (%s)", q.contentType, q.accept, q.note)
	if len(q.body) > 0 {
		body := string(q.body)
		if !isPrintable(body) {
			body = fmt.Sprintf("%q", truncate(body, 300))
		}
		fmt.Fprintf(&b, "\n    body: %s", truncate(body, 600))
	}
	return b.String()
}

func isPrintable(s string) bool {
	for _, c := range []byte(s) {
		if c < 0x20 && c != '\n' && c != '\t' || c >= 0x7f {
			return false
		}
	}
	return true
}

// gen makes one client's requests from its own random source.
type gen struct {
	r *rand.Rand
	// continues are continue tokens lists answered with, to be replayed.
	continues []string
	// known are objects this client read or wrote, by path, as bases for updates and patches.
	known map[string]map[string]any
	// recreate is a create this client sends next, for an object it found missing: the load
	// meets existing objects more often that way.
	recreate *fuzzReq
	// proto encodes built-in objects as Protobuf.
	proto  runtime.Serializer
	scheme *runtime.Scheme
}

func newGen(seed uint64, worker int) *gen {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	return &gen{r: rand.New(rand.NewPCG(seed, uint64(worker))), known: map[string]map[string]any{},
		scheme: scheme, proto: protobuf.NewSerializer(scheme, scheme)}
}

func (g *gen) pick(n int) int { return g.r.IntN(n) }

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func pickOf[T any](g *gen, xs []T) T { return xs[g.r.IntN(len(xs))] }

// weighted picks an index with the given weights.
func (g *gen) weighted(ws ...int) int {
	total := 0
	for _, w := range ws {
		total += w
	}
	n := g.r.IntN(total)
	for i, w := range ws {
		if n < w {
			return i
		}
		n -= w
	}
	return len(ws) - 1
}

// next makes the next request.
func (g *gen) next() *fuzzReq {
	if q := g.recreate; q != nil {
		g.recreate = nil
		return q
	}
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "other"}
	verb := verbs[g.weighted(14, 12, 4, 16, 10, 26, 5, 2, 4)]
	if verb == "other" {
		return g.other()
	}
	q, at := g.target(verb)
	qs := url.Values{}
	if complete := g.verbRequest(q, verb, at, qs); complete {
		return q
	}
	if !strings.HasSuffix(q.path, "/"+q.sub) {
		q.sub = "" // a collection path names no subresource
	}
	q.query = g.noise(qs, q.watch)
	g.negotiate(q, at.kind)
	return q
}

// fuzzTarget is where a request goes: its kind, namespace and name (sometimes a bad one, or a
// deletable one for deletes: the request's name field keeps the one drawn first), and the paths
// of the collection and of the item (with the subresource, if any).
type fuzzTarget struct {
	kind             *kind
	ns, name         string
	collection, item string
}

// target draws the kind, namespace, name and subresource of a request of verb.
func (g *gen) target(verb string) (*fuzzReq, fuzzTarget) {
	// Custom resources weigh double: their schemas (open, closed, deep) are where most goes wrong.
	k := kinds[g.weighted(2, 2, 1, 2, 1, 1, 1, 2, 4, 3)]
	q := &fuzzReq{verb: verb, resource: k.resource}
	ns := ""
	if k.namespaced {
		switch g.weighted(50, 35, 8, 4, 3) {
		case 0, 1:
			ns = mainNamespaces[g.pick(2)]
		case 2:
			ns = scratchNS
		case 3:
			ns = "hz-missing"
		default:
			ns = pickOf(g, badNames)
		}
	}
	names := objectNames
	if k.names != nil {
		names = k.names
	}
	name := pickOf(g, names)
	q.kind, q.ns, q.name = k, ns, name
	if g.chance(0.04) {
		name = pickOf(g, badNames)
	}
	if verb == "delete" && k.deletable != nil {
		name = pickOf(g, k.deletable)
	}
	if g.chance(0.15) {
		if len(k.subs) > 0 && g.chance(0.85) {
			q.sub = pickOf(g, k.subs)
		} else {
			q.sub = pickOf(g, []string{"bogus", "exec", "log", "proxy", "status/extra", "scale"})
		}
	}
	collection := k.prefix()
	if ns != "" {
		collection += "/namespaces/" + ns
	}
	collection += "/" + k.resource
	item := collection + "/" + name
	if q.sub != "" {
		item += "/" + q.sub
	}
	return q, fuzzTarget{kind: k, ns: ns, name: name, collection: collection, item: item}
}

// verbRequest sets q's method, path and body for verb, and its parameters in qs. It reports
// whether q is complete as it is (a deletecollection of scratch objects, which takes no noise).
func (g *gen) verbRequest(q *fuzzReq, verb string, at fuzzTarget, qs url.Values) (complete bool) {
	k, ns, name, collection, item := at.kind, at.ns, at.name, at.collection, at.item
	switch verb {
	case "get":
		q.method, q.path = "GET", item
		g.readParams(qs, false)
	case "list":
		q.method, q.path = "GET", collection
		if k.namespaced && g.chance(0.3) {
			q.path = k.prefix() + "/" + k.resource // across namespaces
		}
		g.readParams(qs, true)
	case "watch":
		g.watchRequest(q, at, qs)
	case "create":
		q.method, q.path = "POST", collection
		if g.chance(0.1) {
			q.path = item // POST to a named path (or a subresource)
		}
		g.body(q, k, ns, name, item)
		g.writeParams(qs)
	case "update":
		q.method, q.path = "PUT", item
		g.body(q, k, ns, name, item)
		g.writeParams(qs)
	case "patch":
		g.patchRequest(q, at, qs)
	case "delete":
		q.method, q.path = "DELETE", item
		g.deleteParams(qs)
		if g.chance(0.3) {
			q.body, q.contentType = g.deleteOptions(), mJSON
		}
	case "deletecollection":
		return g.deleteCollectionRequest(q, at, qs)
	}
	return false
}

func (g *gen) watchRequest(q *fuzzReq, at fuzzTarget, qs url.Values) {
	q.method, q.path, q.watch = "GET", at.collection, true
	if g.chance(0.2) {
		q.path = at.item // a named watch, or a watch of a subresource
	} else if g.chance(0.15) {
		// the legacy /watch/ path prefix
		q.path = strings.Replace(at.collection, "/"+at.kind.version+"/", "/"+at.kind.version+"/watch/", 1)
		q.watch = true
	}
	if !strings.Contains(q.path, "/watch/") {
		qs.Set("watch", pickOf(g, []string{"true", "1", "true"}))
	}
	g.readParams(qs, true)
	q.watchTimeout = g.watchTimeout(qs)
}

func (g *gen) patchRequest(q *fuzzReq, at fuzzTarget, qs url.Values) {
	q.method, q.path = "PATCH", at.item
	g.patch(q, at.kind, at.ns, at.name, at.item)
	g.writeParams(qs)
	if q.contentType == mApply || g.chance(0.05) {
		if g.chance(0.85) {
			qs.Set("fieldManager", pickOf(g, []string{"fuzz-a", "fuzz-b", "kubectl", "", strings.Repeat("m", 200), "a\x01b"}))
		}
		if g.chance(0.4) {
			qs.Set("force", pickOf(g, []string{"true", "false", "yes", ""}))
		}
	}
}

// deleteCollectionRequest reports whether q is complete: a deletecollection of scratch objects.
func (g *gen) deleteCollectionRequest(q *fuzzReq, at fuzzTarget, qs url.Values) (complete bool) {
	q.method, q.path, q.sub = "DELETE", at.collection, ""
	if at.kind.deletable != nil && at.kind.resource != "gadgets" {
		// Namespaces and CRDs: only the scratch ones, selected by label, without noise that
		// could widen the selection.
		qs.Set("labelSelector", scratchLabel)
		q.query = qs.Encode()
		q.accept = g.accept()
		q.note = "deletecollection of scratch objects"
		return true
	}
	g.deleteParams(qs)
	if g.chance(0.5) {
		qs.Set("labelSelector", g.labelSelector())
	}
	if g.chance(0.3) {
		qs.Set("fieldSelector", g.fieldSelector())
	}
	return false
}

// negotiate draws the Accept header of q, unless it has one.
func (g *gen) negotiate(q *fuzzReq, k *kind) {
	if q.accept == "" {
		q.accept = g.accept()
		if q.method != "GET" && g.chance(0.9) {
			// Writes mostly ask for what clients ask for, so they reach the write path.
			q.accept = pickOf(g, []string{mJSON, mJSON, "", mYAML})
			if k.builtin && g.chance(0.2) {
				q.accept = mProto
			}
		}
	}
	if q.watch && g.chance(0.3) {
		q.accept = pickOf(g, []string{mJSON + ";stream=watch", mProto + ";stream=watch", mYAML + ";stream=watch", mJSON + ";as=Table;v=v1;g=meta.k8s.io"})
	}
}

// other is a request off the resource verbs: discovery, OpenAPI, bogus paths and methods.
func (g *gen) other() *fuzzReq {
	paths := []string{"/api", "/api/v1", "/apis", "/apis/" + crGroup, "/apis/" + crGroup + "/v1", "/apis/apps/v1",
		"/openapi/v2", "/openapi/v3", "/openapi/v3/apis/" + crGroup + "/v1", "/openapi/v3/api/v1", "/version", "/healthz", "/livez",
		"/api/v1/nonexistent", "/apis/nope.example.com/v1/things", "/api/v1/namespaces/hz-a/configmaps/n0/a/b/c",
		"/api/v2", "/apis/" + crGroup + "/v2/widgets", "/api/v1/namespaces//configmaps", "//api//v1", "/api/v1/namespaces/hz-a/",
		"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + widgetsCRD + "/status/extra",
		"/" + strings.Repeat("x/", 500), "/api/v1/%2e%2e/namespaces", "/api/v1/namespaces/hz-a/configmaps/%00",
		"/api/v1/namespaces/hz-a/widgets", "/apis/" + crGroup + "/v1/namespaces/hz-a/gadgets", "/api/v1/watch/namespaces/hz-a/configmaps/n0/status"}
	q := &fuzzReq{verb: "other", resource: "-", path: pickOf(g, paths), note: "off the resource verbs"}
	q.method = pickOf(g, []string{"GET", "GET", "GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE", "PROPFIND"})
	if q.method != "GET" && q.method != "HEAD" && q.method != "OPTIONS" {
		q.body, q.contentType = g.randomJSON(), pickOf(g, []string{mJSON, mMerge, mYAML, "text/plain"})
	}
	qs := url.Values{}
	if strings.Contains(q.path, "/watch/") || g.chance(0.1) {
		qs.Set("timeoutSeconds", "1")
		q.watch, q.watchTimeout = true, 1
	}
	q.query = g.noise(qs, q.watch)
	q.accept = g.accept()
	if g.chance(0.3) {
		q.accept = pickOf(g, []string{"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf", "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"})
	}
	return q
}

func (g *gen) accept() string {
	switch g.weighted(35, 10, 8, 14, 8, 4, 5, 3, 3, 4, 6) {
	case 0:
		return mJSON
	case 1:
		return mYAML
	case 2:
		return mProto
	case 3:
		return "application/json;as=Table;v=v1;g=meta.k8s.io"
	case 4:
		return "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
	case 5:
		return "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
	case 6:
		return pickOf(g, []string{mProto + ";as=Table;v=v1;g=meta.k8s.io", mProto + ";as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
			mYAML + ";as=Table;v=v1;g=meta.k8s.io", "application/json;as=Table;v=v1beta1;g=meta.k8s.io", "application/json;as=Table;v=v1;g=meta.k8s.io, application/json"})
	case 7:
		return ""
	case 8:
		return "*/*"
	case 9:
		return pickOf(g, []string{mProto + ", " + mJSON, mYAML + ";q=0.5, " + mJSON, "application/*", mJSON + ";as=Table"})
	default:
		return pickOf(g, []string{"text/html", "application/json;as=Foo;v=v1;g=meta.k8s.io", "application/json;stream=bogus", "garbage/", ";;;", "application/json;as=Table;v=v9;g=meta.k8s.io", randString(g.r, 20)})
	}
}

// readParams adds GET/LIST/WATCH query parameters, valid and not.
func (g *gen) readParams(qs url.Values, list bool) {
	if g.chance(0.35) {
		qs.Set("resourceVersion", g.resourceVersion())
	}
	if !list {
		return
	}
	if g.chance(0.3) {
		qs.Set("resourceVersionMatch", pickOf(g, []string{"NotOlderThan", "Exact", "", "Bogus"}))
	}
	if g.chance(0.35) {
		qs.Set("limit", pickOf(g, []string{"1", "2", "5", "500", "0", "-1", "abc", "99999999999999999999"}))
	}
	if g.chance(0.15) {
		if len(g.continues) > 0 && g.chance(0.6) {
			qs.Set("continue", pickOf(g, g.continues))
		} else {
			qs.Set("continue", pickOf(g, []string{"garbage", "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJ4In0", base64.RawURLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":-5,"start":"\u0000"}`)), "=="}))
		}
	}
	if g.chance(0.25) {
		qs.Set("labelSelector", g.labelSelector())
	}
	if g.chance(0.2) {
		qs.Set("fieldSelector", g.fieldSelector())
	}
	if g.chance(0.1) {
		qs.Set("timeoutSeconds", pickOf(g, []string{"1", "5", "-1", "0"}))
	}
	if g.chance(0.1) {
		qs.Set("allowWatchBookmarks", pickOf(g, []string{"true", "false", "maybe"}))
	}
	if g.chance(0.08) {
		qs.Set("sendInitialEvents", pickOf(g, []string{"true", "false", "x"}))
	}
}

// watchTimeout sets a short timeoutSeconds on a watch (sometimes a negative or bad one) and
// returns how long the watch may then stay open.
func (g *gen) watchTimeout(qs url.Values) int {
	v := pickOf(g, []string{"1", "1", "2", "1", "2", "-1", "-5", "x", "1", "2"})
	qs.Set("timeoutSeconds", v)
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func (g *gen) resourceVersion() string {
	return pickOf(g, []string{"0", "", "1", strconv.Itoa(1 + g.pick(500)), "99999999", "9223372036854775807", "-3", "abc", "1.5"})
}

func (g *gen) labelSelector() string {
	return pickOf(g, []string{"app=hz", "app!=hz", "app in (hz,x)", "!app", "app", "hz=scratch", "a=b,c=d",
		"app==hz", "app=", "((", "app in (", "x=" + strings.Repeat("v", 70), "app notin ()", "a,b,c", "=", "app=hz,app!=hz", "app gt 3"})
}

func (g *gen) fieldSelector() string {
	return pickOf(g, []string{"metadata.name=n0", "metadata.namespace=hz-a", "metadata.name!=n1", "spec.foo=bar",
		"type=Opaque", "involvedObject.name=n0", "status.phase=Active", "metadata.name=", "==", "metadata.name in (n0)", "metadata.name"})
}

func (g *gen) writeParams(qs url.Values) {
	if g.chance(0.15) {
		qs.Set("dryRun", pickOf(g, []string{"All", "All", "", "bogus"}))
	}
	if g.chance(0.25) {
		qs.Set("fieldManager", pickOf(g, []string{"fuzz-a", "fuzz-b", "", strings.Repeat("m", 200), "\u00e9\u0000"}))
	}
	if g.chance(0.3) {
		qs.Set("fieldValidation", pickOf(g, []string{"Strict", "Warn", "Ignore", "", "bogus"}))
	}
}

func (g *gen) deleteParams(qs url.Values) {
	if g.chance(0.3) {
		qs.Set("propagationPolicy", pickOf(g, []string{"Foreground", "Background", "Orphan", "", "Bogus"}))
	}
	if g.chance(0.15) {
		qs.Set("gracePeriodSeconds", pickOf(g, []string{"0", "5", "-1", "x"}))
	}
	if g.chance(0.1) {
		qs.Set("dryRun", pickOf(g, []string{"All", "bogus"}))
	}
	if g.chance(0.05) {
		qs.Set("orphanDependents", pickOf(g, []string{"true", "false", "x"}))
	}
}

func (g *gen) deleteOptions() []byte {
	switch g.pick(5) {
	case 0:
		return []byte(`{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground"}`)
	case 1:
		return []byte(`{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"00000000-0000-0000-0000-000000000000","resourceVersion":"1"}}`)
	case 2:
		return []byte(`{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":-7,"dryRun":["All","x"]}`)
	case 3:
		return []byte(`{"kind":"Status","apiVersion":"v1"}`)
	default:
		return g.randomJSON()
	}
}

// noise finishes a query string: sometimes with an unknown or repeated parameter, or a bad one.
// A watch keeps its timeoutSeconds: an empty one would rightly mean kube's 30-minute default.
func (g *gen) noise(qs url.Values, watch bool) string {
	if g.chance(0.08) {
		key := pickOf(g, []string{"pretty", "zzz", "exact", "export", "timeoutSeconds", "limit", "dryRun", "fieldManager", "fieldValidation", "force", "propagationPolicy", "resourceVersion"})
		value := pickOf(g, []string{"true", "", "-1", "x", strings.Repeat("q", 1000)})
		if !watch || key != "timeoutSeconds" {
			qs.Set(key, value)
		}
	}
	s := qs.Encode()
	if g.chance(0.04) {
		s += pickOf(g, []string{"&limit=1&limit=2", "&%zz", "&;", "&dryRun=All&dryRun=All", "&=x", "&resourceVersion=&resourceVersion=1"})
		s = strings.TrimPrefix(s, "&")
	}
	return s
}

// base is an object to write at item: one this client has seen there, or a fresh sample.
func (g *gen) base(k *kind, ns, name, item string) map[string]any {
	o, ok := g.known[strings.TrimSuffix(strings.TrimSuffix(item, "/status"), "/scale")]
	if ok && g.chance(0.6) {
		if c, ok := deepCopy(o); ok {
			return c
		}
	}
	s := k.sample(g.r, ns, name)
	if !ok {
		return s
	}
	if rv, _ := metaOf(o)["resourceVersion"].(string); rv != "" && g.chance(0.7) {
		// Custom resources refuse updates without one.
		metaOf(s)["resourceVersion"] = rv
	}
	return s
}

// body fills a create or update: a mutated valid object in some encoding, random JSON,
// truncated JSON, a Scale, or garbage.
func (g *gen) body(q *fuzzReq, k *kind, ns, name, item string) {
	o := g.base(k, ns, name, item)
	if q.sub == "scale" && g.chance(0.7) {
		o = map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"replicas": pickOf(g, []any{3, -1, "x", 1e10, nil})}}
	}
	notes := g.mutate(o, k)
	q.note = "object " + strings.Join(notes, ",")
	if spec, ok := o["spec"].(map[string]any); ok && k.group == crGroup && g.chance(0.12) {
		// What only custom resources can hold: nesting near the depth limit, or very many
		// unknown (pruned, warned about) fields.
		if g.chance(0.6) {
			depth := 9900 + g.pick(100)
			spec["deep"] = nested(depth, g.chance(0.2))
			q.note = fmt.Sprintf("custom resource with spec.deep nested %d deep", depth)
			if q.method == "POST" {
				// Names of their own, so they are not refused as existing, and stay to be read.
				metaOf(o)["name"] = fmt.Sprintf("deep-%d", g.pick(3))
			}
		} else {
			n := 20000 + g.pick(80000)
			for i := range n {
				o[fmt.Sprintf("unknown%d", i)] = i
			}
			q.note = fmt.Sprintf("custom resource with %d unknown fields", n)
		}
		q.body, q.contentType = mustJSON(o), mJSON
		return
	}
	switch g.weighted(60, 12, 10, 6, 6, 3, 3) {
	case 0:
		q.body, q.contentType = mustJSON(o), mJSON
	case 1:
		q.body, q.contentType = g.yamlOf(o), mYAML
		q.note += " as YAML"
	case 2:
		q.body, q.contentType = g.protobufOf(o, k), mProto
		q.note += " as Protobuf"
	case 3:
		q.body, q.contentType = g.randomJSON(), mJSON
		q.note = "random JSON"
	case 4:
		b := mustJSON(o)
		q.body, q.contentType = b[:g.pick(len(b))], mJSON
		q.note = "truncated JSON"
	case 5:
		q.body, q.contentType = g.garbage(), pickOf(g, []string{mJSON, mYAML, mProto})
		q.note = "garbage"
	default:
		q.body = g.yamlBomb()
		q.contentType = mYAML
		q.note = "YAML alias bomb"
	}
	if g.chance(0.05) {
		q.contentType = pickOf(g, []string{"", "text/plain", mJSONP, mApply, mJSON + "; charset=utf-16", "application/json;;", "application/cbor", randString(g.r, 12)})
		q.note += " with a wrong content type"
	}
}

// patch fills a PATCH: one of the four patch types, or a wrong content type.
func (g *gen) patch(q *fuzzReq, k *kind, ns, name, item string) {
	switch g.weighted(30, 22, 18, 24, 6) {
	case 0:
		q.contentType = mJSONP
		q.body, q.note = g.jsonPatch(k)
	case 1:
		q.contentType = mMerge
		q.body, q.note = g.mergePatch(k, ns, name, item)
	case 2:
		q.contentType = mSMP
		q.body, q.note = g.strategicPatch(k, ns, name, item)
	case 3:
		q.contentType = mApply
		o := g.base(k, ns, name, item)
		if g.chance(0.5) {
			// An apply configuration carries only what the manager owns.
			delete(o, "status")
			meta, _ := o["metadata"].(map[string]any)
			for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"} {
				delete(meta, f)
			}
		}
		notes := g.mutate(o, k)
		q.note = "apply " + strings.Join(notes, ",")
		switch g.weighted(50, 35, 5, 5, 5) {
		case 0:
			q.body = g.yamlOf(o)
		case 1:
			q.body = mustJSON(o)
		case 2:
			q.body = g.yamlBomb()
			q.note = "apply YAML alias bomb"
		case 3:
			q.body = g.garbage()
			q.note = "apply garbage"
		default:
			b := g.yamlOf(o)
			q.body = b[:g.pick(len(b))]
			q.note = "apply truncated YAML"
		}
	default:
		q.contentType = pickOf(g, []string{mJSON, mYAML, mProto, "", "application/apply-patch+json", "text/plain"})
		q.body, q.note = mustJSON(g.base(k, ns, name, item)), "patch with a non-patch content type"
	}
}

// Paths JSON patches aim at: real ones, their parents, the root, odd escapes.
var patchPaths = []string{"", "/", "/metadata", "/metadata/labels", "/metadata/labels/app", "/metadata/labels/x~1y",
	"/metadata/annotations", "/metadata/annotations/a", "/metadata/name", "/metadata/namespace", "/metadata/finalizers",
	"/metadata/finalizers/-", "/metadata/finalizers/0", "/metadata/resourceVersion", "/metadata/managedFields", "/metadata/ownerReferences/0",
	"/data", "/data/k0", "/data/-", "/spec", "/spec/replicas", "/spec/items/0", "/spec/items/-", "/spec/free/x", "/status",
	"/secrets/0/name", "/secrets/-", "/kind", "/apiVersion", "/nope/deeper/still", "/~0~1", "/spec/items/99999999999", "/data/k0/0"}

func (g *gen) jsonPatch(k *kind) ([]byte, string) {
	switch g.weighted(50, 15, 15, 8, 5, 7) {
	case 0:
		n := 1 + g.pick(6)
		ops := make([]any, 0, n)
		for range n {
			ops = append(ops, g.patchOp())
		}
		return mustJSON(ops), fmt.Sprintf("json-patch of %d random ops", n)
	case 1:
		// A chain of copies, each of a subtree into itself: the subtree doubles with each.
		n := 1 + g.pick(22)
		from := pickOf(g, []string{"/metadata/labels", "/metadata", "/data", "/spec", ""})
		ops := []any{map[string]any{"op": "add", "path": "/metadata/annotations", "value": map[string]any{"a": strings.Repeat("x", 1024)}}}
		if from == "/data" {
			ops = append(ops, map[string]any{"op": "add", "path": "/data", "value": map[string]any{"a": strings.Repeat("x", 1024)}})
		}
		src := from
		if src == "" || src == "/metadata/labels" {
			src = "/metadata/annotations"
		}
		for i := range n {
			ops = append(ops, map[string]any{"op": "copy", "from": src, "path": fmt.Sprintf("%s/c%d", src, i)})
		}
		return mustJSON(ops), fmt.Sprintf("json-patch copy chain of %d on %s", n, src)
	case 2:
		op := pickOf(g, []string{"test", "replace", "add", "copy", "move", "remove"})
		return []byte(fmt.Sprintf(`[{"op":%q,"path":%q}]`, op, pickOf(g, []string{"", "", "/metadata/labels", "/data/k0", "/x"}))), "json-patch op without value/from"
	case 3:
		// Many small operations: kube bounds their number.
		n := 100 + g.pick(15000)
		var b bytes.Buffer
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"op":"test","path":"/kind","value":"` + k.kind + `"}`)
		}
		b.WriteByte(']')
		return b.Bytes(), fmt.Sprintf("json-patch of %d test ops", n)
	case 4:
		return g.randomJSON(), "json-patch random JSON"
	default:
		return []byte(pickOf(g, []string{`{}`, `[]`, `[null]`, `[{"op":null}]`, `[{"op":"add","path":5,"value":1}]`, `[{"op":"add","path":"/metadata/labels/a","value":1}]`,
			`[{"op":"move","from":"/metadata","path":"/metadata/x"}]`, `[{"op":"copy","from":"/metadata/name","path":"/metadata/labels/n"}]`, `[{"op":"remove","path":"/metadata"}]`,
			`[{"op":"replace","path":"","value":null}]`, `[{"op":"replace","path":"","value":[]}]`, `[{"op":"add","path":"/metadata/finalizers/-1","value":"x"}]`})), "json-patch edge case"
	}
}

func (g *gen) patchOp() map[string]any {
	op := map[string]any{"op": pickOf(g, []string{"add", "remove", "replace", "move", "copy", "test", "bogus"}), "path": pickOf(g, patchPaths)}
	if g.chance(0.85) {
		op["value"] = g.randomValue(3)
	}
	if g.chance(0.4) {
		op["from"] = pickOf(g, patchPaths)
	}
	return op
}

func (g *gen) mergePatch(k *kind, ns, name, item string) ([]byte, string) {
	switch g.weighted(60, 15, 15, 10) {
	case 0:
		o := g.base(k, ns, name, item)
		notes := g.mutate(o, k)
		// Keep a random part, set some keys to null (delete).
		for _, key := range sortedKeys(o) {
			switch {
			case g.chance(0.3):
				delete(o, key)
			case g.chance(0.1):
				o[key] = nil
			}
		}
		return mustJSON(o), "merge-patch " + strings.Join(notes, ",")
	case 1:
		return g.randomJSON(), "merge-patch random JSON"
	case 2:
		return []byte(pickOf(g, []string{`null`, `[]`, `"x"`, `{"metadata":null}`, `{"metadata":{"name":null}}`, `{"metadata":{"labels":{"a":{}}}}`,
			`{"apiVersion":null,"kind":null}`, `{"metadata":{"resourceVersion":"1"}}`, `{"metadata":{"deletionTimestamp":"2020-01-01T00:00:00Z"}}`,
			`{"metadata":{"finalizers":["a/b"]}}`, `{"spec":{"replicas":"x"}}`, `{"status":{"replicas":-1}}`})), "merge-patch edge case"
	default:
		o := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"big": strings.Repeat("b", 1+g.pick(400<<10))}}}
		return mustJSON(o), "merge-patch big annotation"
	}
}

func (g *gen) strategicPatch(k *kind, ns, name, item string) ([]byte, string) {
	switch g.weighted(35, 45, 10, 10) {
	case 0:
		o := g.base(k, ns, name, item)
		notes := g.mutate(o, k)
		return mustJSON(o), "strategic-merge-patch " + strings.Join(notes, ",")
	case 1:
		odd := []any{map[string]any{}, []any{}, 1, nil, true, "", 1.5, []any{map[string]any{}}}
		key := pickOf(g, odd)
		var p map[string]any
		if k.resource == "customresourcedefinitions" && g.chance(0.7) {
			// spec.versions merges by name, and every CRD has one.
			return mustJSON(map[string]any{"spec": map[string]any{"versions": []any{map[string]any{"name": key}}}}), "strategic-merge-patch odd merge key"
		}
		switch g.pick(7) {
		case 0:
			p = map[string]any{"secrets": []any{map[string]any{"name": key}}}
		case 1:
			p = map[string]any{"imagePullSecrets": []any{map[string]any{"name": key, "$patch": "delete"}}}
		case 2:
			p = map[string]any{"metadata": map[string]any{"ownerReferences": []any{map[string]any{"uid": key, "name": "x", "kind": "K", "apiVersion": "v1"}}}}
		case 3:
			p = map[string]any{"$setElementOrder/secrets": []any{map[string]any{"name": key}}, "secrets": []any{map[string]any{"name": "s1"}}}
		case 4:
			p = map[string]any{"secrets": []any{map[string]any{"$patch": pickOf(g, []string{"replace", "delete", "merge", "bogus"}), "name": key}}}
		case 5:
			p = map[string]any{"metadata": map[string]any{"$deleteFromPrimitiveList/finalizers": []any{key}, "finalizers": []any{key}}}
		default:
			p = map[string]any{"secrets": key}
		}
		return mustJSON(p), "strategic-merge-patch odd merge key"
	case 2:
		return []byte(pickOf(g, []string{`{"$patch":"replace"}`, `{"$patch":"delete"}`, `{"$patch":"bogus"}`, `{"$retainKeys":["data"],"data":{}}`,
			`{"$retainKeys":5}`, `{"data":{"$patch":"replace","a":"b"}}`, `{"metadata":{"$patch":"delete"}}`, `{"$setElementOrder/x":5}`,
			`{"secrets":[{"$retainKeys":["name"],"name":"s"}]}`, `[]`, `null`, `{"metadata":{"labels":{"$patch":"replace"}}}`})), "strategic-merge-patch directive"
	default:
		return g.randomJSON(), "strategic-merge-patch random JSON"
	}
}

// mutate changes o in place in a few random ways and says how.
func (g *gen) mutate(o map[string]any, k *kind) []string {
	var notes []string
	for range g.weighted(50, 30, 15, 5) {
		switch g.weighted(20, 12, 10, 8, 8, 10, 12, 8, 6) {
		case 0:
			m := g.someMap(o)
			key := g.someKey(m)
			m[key] = g.randomValue(3)
			notes = append(notes, "set "+key)
		case 1:
			m := g.someMap(o)
			if len(m) > 0 {
				key := pickOf(g, sortedKeys(m))
				m[key] = g.otherType(m[key])
				notes = append(notes, "wrong type at "+key)
			}
		case 2:
			// Around 10 000, kube's JSON depth limit, and beyond.
			depth := pickOf(g, []int{10, 100, 1000, 5000, 9985 + g.pick(20), 9990 + g.pick(10), 9990 + g.pick(10), 20000})
			where := o
			if spec, ok := o["spec"].(map[string]any); ok {
				where = spec
			}
			where["deep"] = nested(depth, g.chance(0.5))
			notes = append(notes, fmt.Sprintf("nested %d deep", depth))
		case 3:
			m := g.someMap(o)
			n := pickOf(g, []int{1 << 10, 64 << 10, 512 << 10, 1 << 20, 2500 << 10})
			m[g.someKey(m)] = strings.Repeat("z", n)
			notes = append(notes, fmt.Sprintf("string of %d", n))
		case 4:
			n := pickOf(g, []int{1, 10, 1000, 20000, 100000, 100000})
			where := o
			if spec, ok := o["spec"].(map[string]any); ok && g.chance(0.5) {
				where = spec
			}
			for i := range n {
				where[fmt.Sprintf("unknown%d", i)] = i
			}
			notes = append(notes, fmt.Sprintf("%d unknown fields", n))
		case 5:
			meta := metaOf(o)
			meta["name"] = strings.ReplaceAll(strings.ReplaceAll(pickOf(g, badNames), "%2F", "/"), "%20", " ")
			notes = append(notes, "bad name")
		case 6:
			notes = append(notes, g.badMetadata(metaOf(o)))
		case 7:
			m := g.someMap(o)
			if len(m) > 0 {
				key := pickOf(g, sortedKeys(m))
				delete(m, key)
				notes = append(notes, "without "+key)
			}
		default:
			if g.chance(0.5) {
				o["apiVersion"] = pickOf(g, []any{"v2", "apps/v1", "", 5, crGroup + "/v1", "events.k8s.io/v1"})
			} else {
				o["kind"] = pickOf(g, []any{"Pod", "", "ConfigMap", "Widget", nil, "Status"})
			}
			notes = append(notes, "other type")
		}
	}
	return notes
}

func metaOf(o map[string]any) map[string]any {
	if m, ok := o["metadata"].(map[string]any); ok {
		return m
	}
	m := map[string]any{}
	o["metadata"] = m
	return m
}

func (g *gen) badMetadata(meta map[string]any) string {
	switch g.pick(14) {
	case 0:
		meta["labels"] = map[string]any{"bad key!": "v", "k": strings.Repeat("v", 70), "": "x"}
		return "bad labels"
	case 1:
		meta["annotations"] = map[string]any{"a": strings.Repeat("a", 300<<10)}
		return "annotations over 256 KiB"
	case 2:
		meta["ownerReferences"] = pickOf(g, []any{
			[]any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "n0", "uid": "u1"}},
			[]any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "n0", "uid": "u1", "controller": true}, map[string]any{"apiVersion": "v1", "kind": "Secret", "name": "n1", "uid": "u2", "controller": true}},
			[]any{map[string]any{}}, "x", []any{map[string]any{"uid": 5}}})
		return "odd ownerReferences"
	case 3:
		meta["managedFields"] = pickOf(g, []any{[]any{map[string]any{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:x": map[string]any{}}}},
			[]any{map[string]any{"manager": 5}}, "x", []any{map[string]any{"fieldsV1": "bad", "fieldsType": "FieldsV2"}}, []any{}})
		return "odd managedFields"
	case 4:
		meta["finalizers"] = pickOf(g, []any{[]any{"a/b"}, []any{"bad finalizer"}, []any{"kubernetes"}, []any{5}, []any{"x/y", "x/y"}})
		return "odd finalizers"
	case 5:
		meta["resourceVersion"] = pickOf(g, []any{"1", "abc", "99999999", 5, "", "-1"})
		return "odd resourceVersion"
	case 6:
		meta["uid"] = pickOf(g, []any{"x", 5, "00000000-0000-0000-0000-000000000000"})
		return "odd uid"
	case 7:
		meta["creationTimestamp"] = pickOf(g, []any{"yesterday", 5, "2020-01-01T00:00:00Z", nil})
		return "odd creationTimestamp"
	case 8:
		meta["deletionTimestamp"] = pickOf(g, []any{"2020-01-01T00:00:00Z", "x"})
		meta["deletionGracePeriodSeconds"] = pickOf(g, []any{0, -1, "x"})
		return "deletionTimestamp set"
	case 9:
		delete(meta, "name")
		meta["generateName"] = pickOf(g, []any{"gen-", "UPPER-", strings.Repeat("g", 300), 5})
		return "generateName"
	case 10:
		meta["namespace"] = pickOf(g, []any{"hz-b", "other", 5, "BAD"})
		return "other namespace"
	case 11:
		meta["generation"] = pickOf(g, []any{-1, "x", 1 << 62})
		return "odd generation"
	case 12:
		meta["labels"] = g.randomValue(2)
		return "labels of another type"
	default:
		return "metadata as " + fmt.Sprint(g.replaceMeta(meta))
	}
}

func (g *gen) replaceMeta(meta map[string]any) string {
	for k := range meta {
		delete(meta, k)
	}
	meta["name"] = []any{"n0"}
	return "name a list"
}

// someMap returns o or a map nested in it.
func (g *gen) someMap(o map[string]any) map[string]any {
	var maps []map[string]any
	var walk func(m map[string]any, depth int)
	walk = func(m map[string]any, depth int) {
		maps = append(maps, m)
		if depth > 4 {
			return
		}
		for _, k := range sortedKeys(m) {
			if c, ok := m[k].(map[string]any); ok {
				walk(c, depth+1)
			}
		}
	}
	walk(o, 0)
	return pickOf(g, maps)
}

func (g *gen) someKey(m map[string]any) string {
	if len(m) > 0 && g.chance(0.5) {
		return pickOf(g, sortedKeys(m))
	}
	return pickOf(g, []string{"x", "spec", "data", "replicas", "name", "$patch", "", "a.b", "f:x", "metadata"})
}

func (g *gen) otherType(v any) any {
	for {
		n := g.randomValue(1)
		if fmt.Sprintf("%T", n) != fmt.Sprintf("%T", v) {
			return n
		}
	}
}

// randomValue is a random JSON-able value at most depth levels deep.
func (g *gen) randomValue(depth int) any {
	k := g.pick(9)
	if depth <= 0 && k >= 7 {
		k = g.pick(7)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return g.chance(0.5)
	case 2:
		return pickOf(g, []any{0, -1, 1 << 53, json.Number("1e400"), json.Number("-0"), json.Number("123456789012345678901234567890"), 1.5, json.Number("1e-400")})
	case 3, 4:
		return randString(g.r, g.pick(30))
	case 5:
		return pickOf(g, []string{"", "\u0000", "\ufffd", "2020-01-01T00:00:00Z", "null", "{}", strings.Repeat("é", 50)})
	case 6:
		return pickOf(g, []any{map[string]any{}, []any{}})
	case 7:
		n := g.pick(4)
		l := make([]any, n)
		for i := range l {
			l[i] = g.randomValue(depth - 1)
		}
		return l
	default:
		m := map[string]any{}
		for range g.pick(4) {
			m[randString(g.r, 1+g.pick(8))] = g.randomValue(depth - 1)
		}
		return m
	}
}

// randomJSON is random JSON text, sometimes not quite JSON.
func (g *gen) randomJSON() []byte {
	if g.chance(0.2) {
		return []byte(pickOf(g, []string{`{"a":1,"a":2}`, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n0"},"data":{"a":"\ud800"}}`,
			`[1,2`, `{`, `"\u0000"`, `1e999999`, `{"metadata":{"name":"n0"}}garbage`, ` `, `{"kind":"ConfigMap"}{"kind":"Secret"}`, "\xff\xfe{}"}))
	}
	return mustJSON(g.randomValue(4))
}

func (g *gen) garbage() []byte {
	b := make([]byte, g.pick(2048))
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	if g.chance(0.5) {
		// The Protobuf envelope's magic number, then junk.
		return append([]byte("k8s\x00"), b...)
	}
	return b
}

// yamlOf is o as YAML; deep objects stay JSON (also YAML), as their YAML grows with the
// square of the depth.
func (g *gen) yamlOf(o map[string]any) []byte {
	j := mustJSON(o)
	if jsonDepth(j) > 100 || len(j) > 1<<20 {
		return j
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return j
	}
	return y
}

// yamlBomb is a small YAML document whose aliases expand enormously.
func (g *gen) yamlBomb() []byte {
	levels := 3 + g.pick(7)
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: n0\nx0: &x0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "x%d: &x%d [", i, i)
		for j := range 9 {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "*x%d", i-1)
		}
		b.WriteString("]\n")
	}
	return []byte(b.String())
}

// fromUnstructured is the unstructured converter, which panics on some generated values (a
// json.Number where a string belongs): those are reported as an error.
func fromUnstructured(o map[string]any, into runtime.Object) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("converting: %v", p)
		}
	}()
	return runtime.DefaultUnstructuredConverter.FromUnstructured(o, into)
}

// protobufOf encodes o as Protobuf when it converts to its Go type, then maybe damages it.
func (g *gen) protobufOf(o map[string]any, k *kind) []byte {
	var b []byte
	if k.builtin {
		typed, err := g.scheme.New(schemaGVK(k))
		if err == nil && fromUnstructured(o, typed) == nil {
			var buf bytes.Buffer
			if g.proto.Encode(typed, &buf) == nil {
				b = buf.Bytes()
			}
		}
	}
	if b == nil {
		return g.garbage()
	}
	switch g.pick(4) {
	case 0:
		return b[:g.pick(len(b))]
	case 1:
		for range 1 + g.pick(4) {
			b[g.pick(len(b))] = byte(g.r.UintN(256))
		}
	}
	return b
}

// nested is a value depth levels deep: objects or arrays.
func nested(depth int, arrays bool) any {
	var v any = "leaf"
	for range depth {
		if arrays {
			v = []any{v}
		} else {
			v = map[string]any{"a": v}
		}
	}
	return v
}

func randString(r *rand.Rand, n int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789-._"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[r.IntN(len(letters))]
	}
	return string(b)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// deepCopy copies o through JSON; it fails only for objects too deep for encoding/json.
func deepCopy(o map[string]any) (map[string]any, bool) {
	var c map[string]any
	if err := json.Unmarshal(mustJSON(o), &c); err != nil {
		return nil, false
	}
	return c, true
}

// jsonDepth is how deeply JSON text nests (ignoring brackets in strings is not worth it here).
func jsonDepth(b []byte) int {
	depth, max := 0, 0
	for _, c := range b {
		switch c {
		case '{', '[':
			depth++
			if depth > max {
				max = depth
			}
		case '}', ']':
			depth--
		}
	}
	return max
}

func schemaGVK(k *kind) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: k.group, Version: k.version, Kind: k.kind}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

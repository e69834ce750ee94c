package discovery

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lapis-dev/lapis/internal/catalog"
	upstreamaggregator "github.com/lapis-dev/lapis/internal/upstream/aggregator"
)

// Handler serves the discovery documents of a catalogue.
type Handler struct {
	cat     *catalog.Catalog
	prio    priorities
	agg     aggregation
	mu      sync.Mutex // serialises rebuilds
	current atomic.Pointer[documents]
}

// NewHandler returns a handler serving cat's discovery documents, with kube-apiserver's
// APIService priorities ordering its groups.
func NewHandler(cat *catalog.Catalog) *Handler {
	return &Handler{cat: cat, prio: upstreamaggregator.KubeAPIServerPriorities()}
}

// Serves reports whether path is a discovery path: /api, /api/VERSION, /apis, /apis/GROUP or
// /apis/GROUP/VERSION (a trailing slash allowed). It does not check that the group or version
// exists; the handler answers 404 for those that do not.
func (h *Handler) Serves(path string) bool {
	return discoveryPath(path) != ""
}

// discoveryPath returns path without a trailing slash if it is a discovery path, else "".
func discoveryPath(path string) string {
	path = strings.TrimSuffix(path, "/")
	var rest string
	var maxSegments int
	switch {
	case path == "/api" || path == "/apis":
		return path
	case strings.HasPrefix(path, "/api/"):
		rest, maxSegments = path[len("/api/"):], 1
	case strings.HasPrefix(path, "/apis/"):
		rest, maxSegments = path[len("/apis/"):], 2
	default:
		return ""
	}
	segments := strings.Split(rest, "/")
	if len(segments) > maxSegments {
		return ""
	}
	for _, s := range segments {
		if s == "" {
			return ""
		}
	}
	return path
}

// ServeHTTP serves a discovery document.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := discoveryPath(r.URL.Path)
	if path == "" {
		writeJSON(w, http.StatusNotFound, "application/json", notFoundBody)
		return
	}
	docs := h.documents()
	if group, _, _ := strings.Cut(strings.TrimPrefix(path, "/apis/"), "/"); strings.HasPrefix(path, "/apis/") && !h.servesGroup(group, docs.agg) {
		// kube-apiserver has no handler at all for a group it does not serve.
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeJSON(w, http.StatusMethodNotAllowed, "application/json", methodNotAllowedBody)
		return
	}

	if agg := docs.aggregated[path]; agg != nil {
		w.Header().Set("Vary", "Accept")
		if v := aggregatedVersion(r.Header.Get("Accept")); v != "" {
			w.Header().Set("ETag", agg.etag)
			w.Header().Set("Cache-Control", "public")
			if r.Header.Get("If-None-Match") == agg.etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
			contentType := "application/json;g=" + aggregatedGroup + ";v=" + v + ";as=" + aggregatedKind
			writeJSON(w, http.StatusOK, contentType, agg.byVersion[v])
			return
		}
	}
	if path == "/api" {
		writeJSON(w, http.StatusOK, "application/json", apiVersions(docs.coreVersions, r.Host))
		return
	}
	if body, ok := docs.legacy[path]; ok {
		writeJSON(w, http.StatusOK, "application/json", body)
		return
	}
	writeJSON(w, http.StatusNotFound, "application/json", notFoundBody)
}

// documents returns the documents for the catalogue's current revision, building them if the
// catalogue has changed since they were last built.
func (h *Handler) documents() *documents {
	// Read the revision before the resources: documents are then never older than their key.
	rev, aggRev := h.cat.Revision(), h.agg.currentRevision()
	if d := h.current.Load(); d != nil && d.revision == rev && d.agg.revision == aggRev {
		return d
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if d := h.current.Load(); d != nil && d.revision == rev && d.agg.revision == aggRev {
		return d
	}
	d := build(rev, h.cat.All(), h.agg.snapshot(), h.prio)
	h.current.Store(d)
	return d
}

// apiVersions encodes /api's document, which names the address the client reached the server at.
func apiVersions(versions []string, host string) []byte {
	if versions == nil {
		versions = []string{}
	}
	// kube strips apiVersion from this document.
	return encode(metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: versions,
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: host},
		},
	})
}

var (
	notFoundBody         = statusBody(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	methodNotAllowedBody = statusBody(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "the server does not allow this method on the requested resource")
)

func statusBody(code int32, reason metav1.StatusReason, message string) []byte {
	b, _ := json.Marshal(metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  message,
		Reason:   reason,
		Details:  &metav1.StatusDetails{},
		Code:     code,
	})
	return append(b, '\n')
}

func writeJSON(w http.ResponseWriter, code int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// aggregatedVersion returns the apidiscovery.k8s.io version ("v2" or "v2beta1") an Accept header
// asks for, or "" when the legacy document is wanted. As kube does, it takes the first acceptable
// clause by preference: a JSON clause naming an aggregated discovery list selects that, a plain
// JSON clause selects the legacy document, and clauses naming other types or conversions are
// skipped. When no clause is acceptable the legacy document is served.
func aggregatedVersion(accept string) string {
	if !strings.Contains(accept, aggregatedGroup) {
		return "" // the common legacy case, without parsing
	}
	clauses := parseAccept(accept)
	for _, c := range clauses {
		if c.q <= 0 || !(c.mediaType == "application/json" || c.mediaType == "application/*" || c.mediaType == "*/*") {
			continue
		}
		if c.g == "" && c.v == "" && c.as == "" {
			return ""
		}
		if c.g == aggregatedGroup && c.as == aggregatedKind && (c.v == "v2" || c.v == "v2beta1") {
			return c.v
		}
	}
	return ""
}

type acceptClause struct {
	mediaType string
	q         float64
	g, v, as  string
}

// parseAccept splits an Accept header into clauses ordered by preference: by quality, then more
// specific media types first, then header order.
func parseAccept(header string) []acceptClause {
	var out []acceptClause
	for _, part := range strings.Split(header, ",") {
		params := strings.Split(part, ";")
		c := acceptClause{mediaType: strings.ToLower(strings.TrimSpace(params[0])), q: 1}
		if c.mediaType == "" {
			continue
		}
		for _, p := range params[1:] {
			k, v, _ := strings.Cut(p, "=")
			v = strings.Trim(strings.TrimSpace(v), `"`)
			switch strings.TrimSpace(k) {
			case "q":
				if q, err := strconv.ParseFloat(v, 64); err == nil {
					c.q = q
				}
			case "g":
				c.g = v
			case "v":
				c.v = v
			case "as":
				c.as = v
			}
		}
		out = append(out, c)
	}
	specificity := func(mediaType string) int {
		switch {
		case mediaType == "*/*":
			return 0
		case strings.HasSuffix(mediaType, "/*"):
			return 1
		}
		return 2
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].q != out[j].q {
			return out[i].q > out[j].q
		}
		return specificity(out[i].mediaType) > specificity(out[j].mediaType)
	})
	return out
}

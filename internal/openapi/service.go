package openapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"github.com/munnerz/goautoneg"
	"google.golang.org/protobuf/proto"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// Media types kube-apiserver serves OpenAPI in. Clients ask for protobuf with the "@" form
// (client-go's discovery client does for v2); the "." form is what the response says.
const (
	v2ProtoAccept = "com.github.proto-openapi.spec.v2@v1.0+protobuf"
	v2Proto       = "com.github.proto-openapi.spec.v2.v1.0+protobuf"
	v3ProtoAccept = "com.github.proto-openapi.spec.v3@v1.0+protobuf"
	v3Proto       = "com.github.proto-openapi.spec.v3.v1.0+protobuf"
)

// Service serves the OpenAPI v2 and v3 documents of what the catalogue serves. Documents are
// built when first asked for after the catalogue changes, and v3 group-version documents whose
// resources did not change are carried over.
type Service struct {
	cat *catalog.Catalog
	agg Aggregated

	mu   sync.Mutex
	snap *snapshot
}

// NewService serves OpenAPI documents for whatever the catalogue serves.
func NewService(cat *catalog.Catalog) *Service {
	return &Service{cat: cat, agg: none{}}
}

// WithAggregated adds the extension servers' documents to s's.
func (s *Service) WithAggregated(agg Aggregated) *Service {
	s.agg = agg
	return s
}

// snapshot holds the documents of one catalogue revision.
type snapshot struct {
	revision    uint64
	aggRevision uint64 // the extension servers' documents'
	v2          *document
	v3          map[string]*document // by gvPath
	remoteV3    map[string]string    // the extension servers' group versions: gvPath to URL
	root        *document            // the v3 discovery document
}

// current returns the snapshot for the catalogue's current revision, setting one up (without
// building any document yet) if the catalogue changed.
func (s *Service) current() *snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	rev, aggRev := s.cat.Revision(), s.agg.Revision()
	if s.snap != nil && s.snap.revision == rev && s.snap.aggRevision == aggRev {
		return s.snap
	}
	all := s.cat.All()
	byGV := map[string][]*catalog.Resource{}
	for _, r := range all {
		byGV[gvPath(r.GroupVersion)] = append(byGV[gvPath(r.GroupVersion)], r)
	}
	old := s.snap
	if old == nil {
		old = &snapshot{}
	}
	next := &snapshot{revision: rev, aggRevision: aggRev, v3: make(map[string]*document, len(byGV)), remoteV3: s.agg.V3Paths()}
	if old.v2 != nil && slices.Equal(old.v2.resources, all) && old.aggRevision == aggRev {
		next.v2 = old.v2
	} else {
		remote := s.agg.V2()
		next.v2 = newDocument(all, func(rs []*catalog.Resource) any { return mergedV2(buildV2(rs), remote) }, v2ToProto)
	}
	for gv, rs := range byGV {
		if d := old.v3[gv]; d != nil && slices.Equal(d.resources, rs) {
			next.v3[gv] = d
		} else {
			next.v3[gv] = newDocument(rs, func(rs []*catalog.Resource) any { return buildV3(rs) }, v3ToProto)
		}
	}
	next.root = newDocument(nil, func([]*catalog.Resource) any { return next.discovery() }, nil)
	s.snap = next
	return next
}

// discoveryDoc is the OpenAPI v3 discovery document at /openapi/v3.
type discoveryDoc struct {
	Paths map[string]discoveryEntry `json:"paths"`
}

type discoveryEntry struct {
	ServerRelativeURL string `json:"serverRelativeURL"`
}

func (sn *snapshot) discovery() any {
	out := discoveryDoc{Paths: make(map[string]discoveryEntry, len(sn.v3)+len(sn.remoteV3))}
	for gv, u := range sn.remoteV3 {
		out.Paths[gv] = discoveryEntry{ServerRelativeURL: u}
	}
	for gv, d := range sn.v3 {
		ed := d.get()
		if ed.err != nil {
			return ed.err
		}
		out.Paths[gv] = discoveryEntry{ServerRelativeURL: serverRelativeURL(gv, ed.etag)}
	}
	return out
}

func serverRelativeURL(gv, hash string) string {
	return (&url.URL{Path: "/openapi/v3/" + gv, RawQuery: url.Values{"hash": {hash}}.Encode()}).String()
}

// document is one OpenAPI document, built and encoded once, on first use.
type document struct {
	resources []*catalog.Resource // what it was built from, to tell whether it can be carried over
	build     func([]*catalog.Resource) any
	toProto   func([]byte) ([]byte, error)

	once    sync.Once
	encoded encoded

	protoOnce sync.Once
	proto     []byte
	protoErr  error
}

// encoded is a document's JSON, kept gzipped: the v3 documents are ~10 MiB of JSON together,
// ~1 MiB gzipped. It is served unzipped, as kube-apiserver serves it whatever the client accepts.
type encoded struct {
	gzipped  []byte
	etag     string // of the JSON
	modified time.Time
	err      error
}

// json is the document's JSON.
func (e encoded) json() ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(e.gzipped))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

func gzipped(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return bytes.Clone(buf.Bytes()), nil // not the buffer's spare capacity
}

func newDocument(rs []*catalog.Resource, build func([]*catalog.Resource) any, toProto func([]byte) ([]byte, error)) *document {
	return &document{resources: rs, build: build, toProto: toProto}
}

func (d *document) get() encoded {
	d.once.Do(func() {
		v := d.build(d.resources)
		if err, ok := v.(error); ok {
			d.encoded.err = err
			return
		}
		j, err := json.Marshal(v)
		if err != nil {
			d.encoded.err = err
			return
		}
		d.encoded.etag = fmt.Sprintf("%X", sha512.Sum512(j))
		d.encoded.gzipped, d.encoded.err = gzipped(j)
		d.encoded.modified = time.Now()
	})
	return d.encoded
}

func (d *document) getProto() ([]byte, error) {
	d.protoOnce.Do(func() {
		e := d.get()
		if e.err != nil {
			d.protoErr = e.err
			return
		}
		j, err := e.json()
		if err != nil {
			d.protoErr = err
			return
		}
		d.proto, d.protoErr = d.toProto(j)
	})
	return d.proto, d.protoErr
}

func v2ToProto(j []byte) ([]byte, error) {
	doc, err := openapi_v2.ParseDocument(j)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(doc)
}

func v3ToProto(j []byte) ([]byte, error) {
	doc, err := openapi_v3.ParseDocument(j)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(doc)
}

// ServeHTTP serves /openapi/v2, /openapi/v3 and /openapi/v3/{api/v1,apis/GROUP/VERSION}.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch p := strings.TrimSuffix(r.URL.Path, "/"); {
	case p == "/openapi/v2":
		serve(w, r, s.current().v2, v2ProtoAccept, v2Proto)
	case p == "/openapi/v3":
		serveJSON(w, r, s.current().root.get())
	case strings.HasPrefix(p, "/openapi/v3/"):
		gv := strings.TrimPrefix(p, "/openapi/v3/")
		d := s.current().v3[gv]
		if d == nil {
			if !s.agg.ServeV3(w, r) {
				w.WriteHeader(http.StatusNotFound) // kube's OpenAPI v3 handler answers with no body
			}
			return
		}
		e := d.get()
		if e.err == nil {
			if hash := r.URL.Query().Get("hash"); hash != "" {
				if hash != e.etag {
					// An old hash: send the client to the current document, as kube does.
					http.Redirect(w, r, serverRelativeURL(gv, e.etag), http.StatusMovedPermanently)
					return
				}
				// The URL names this exact content, so it can be cached for good.
				w.Header().Set("Cache-Control", "public, immutable")
				w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
			}
		}
		serve(w, r, d, v3ProtoAccept, v3Proto)
	default:
		http.NotFound(w, r)
	}
}

// serve writes d as JSON or protobuf, whichever the Accept header prefers.
func serve(w http.ResponseWriter, r *http.Request, d *document, protoAccept, protoType string) {
	w.Header().Add("Vary", "Accept")
	accept := r.Header.Get("Accept")
	if accept == "" {
		accept = "*/*"
	}
	for _, c := range goautoneg.ParseAccept(accept) {
		if c.Type != "application" && c.Type != "*" {
			continue
		}
		switch c.SubType {
		case "json", "*":
			serveJSON(w, r, d.get())
			return
		case protoAccept, protoType:
			e := d.get()
			body, err := d.getProto()
			if err != nil {
				http.Error(w, "building OpenAPI document: "+err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/"+protoType)
			w.Header().Set("Etag", strconv.Quote(e.etag))
			http.ServeContent(w, r, "", e.modified, bytes.NewReader(body))
			return
		}
	}
	http.Error(w, "OpenAPI is served as application/json or application/"+protoType, http.StatusNotAcceptable)
}

func serveJSON(w http.ResponseWriter, r *http.Request, e encoded) {
	if e.err != nil {
		http.Error(w, "building OpenAPI document: "+e.err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Etag", strconv.Quote(e.etag))
	j, err := e.json()
	if err != nil {
		http.Error(w, "reading OpenAPI document: "+err.Error(), http.StatusInternalServerError)
		return
	}
	http.ServeContent(w, r, "", e.modified, bytes.NewReader(j))
}

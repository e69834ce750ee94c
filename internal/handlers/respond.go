package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"sigs.k8s.io/yaml"

	"github.com/lapis-dev/lapis/internal/jsoncost"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/routing"
)

// WriteError answers with err as a metav1.Status; errors that are not API errors are internal.
func WriteError(w http.ResponseWriter, req *http.Request, err error) { writeError(w, req, err) }

func writeError(w http.ResponseWriter, req *http.Request, err error) {
	var status metav1.Status
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		status = apiStatus.Status()
	} else {
		status = apierrors.NewInternalError(err).Status()
	}
	status.Kind, status.APIVersion = "Status", "v1"
	if status.Code == 0 {
		status.Code = http.StatusInternalServerError
	}
	if retry := status.Details; retry != nil && retry.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(retry.RetryAfterSeconds)))
	}
	// A Status has a Protobuf form whatever the resource: kube-apiserver answers errors in
	// Protobuf to clients that ask for it, custom resources included.
	writeStatus(w, req, int(status.Code), &status, true)
}

// writeStatus writes a Status in the negotiated media type (JSON when the client accepts none:
// statuses never fail negotiation); protobuf says whether Protobuf may be negotiated.
func writeStatus(w http.ResponseWriter, req *http.Request, code int, status *metav1.Status, protobuf bool) {
	auditResponse(req, status)
	mediaType, ok := routing.NegotiateObject(req.Header.Get("Accept"), protobuf)
	if !ok {
		mediaType = routing.JSON
	}
	if mediaType == routing.Protobuf {
		writeProtobuf(w, req, code, status)
		return
	}
	body, _ := json.Marshal(status)
	writeBodyAs(w, req, code, body, mediaType)
}

// writeBodyAs writes a JSON body in mediaType (JSON or YAML).
func writeBodyAs(w http.ResponseWriter, req *http.Request, code int, body []byte, mediaType string) {
	auditResponseJSON(req, body)
	// Block-style YAML indents every line by its depth, so deep nesting makes it grow with the
	// square of the depth. Past a bound the body goes as it is: JSON is YAML too.
	if mediaType == routing.YAML && jsoncost.Measure(body).BlockYAMLSize <= maxYAMLBytes(len(body)) {
		if y, err := yaml.JSONToYAML(body); err == nil {
			body = y
		} else {
			mediaType = routing.JSON
		}
	}
	send(w, req, code, mediaType, body)
}

// maxYAMLBytes bounds the block-style YAML made of n bytes of JSON: a few times the JSON, far
// more than ordinary objects need.
func maxYAMLBytes(n int) int { return 16*n + 1<<20 }

// send writes an encoded body.
func send(w http.ResponseWriter, req *http.Request, code int, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	if req.Method != http.MethodHead {
		_ = writeInFrames(w, body)
	}
}

// responseType is the negotiated media type of a write's answer (checkAcceptable has refused
// requests that accept none).
func responseType(rq *request) string {
	mediaType, ok := routing.NegotiateObject(rq.req.Header.Get("Accept"), rq.protobuf)
	if !ok {
		return routing.JSON
	}
	return mediaType
}

// writeObject answers with obj in the negotiated media type, converted to a Table or its
// metadata when the client asks for one, as kube-apiserver answers writes.
func (h *Handler) writeObject(rq *request, code int, obj *unstructured.Unstructured) {
	if target, ok := routing.NegotiateRead(rq.req.Header.Get("Accept"), false, rq.protobuf); ok && target.As != "" {
		writeConvertedAs(rq, code, target, []*unstructured.Unstructured{obj}, metav1.ListMeta{ResourceVersion: obj.GetResourceVersion()})
		return
	}
	mediaType := responseType(rq)
	if mediaType == routing.Protobuf {
		typed, err := h.typedFromUnstructured(obj)
		if err != nil {
			writeError(rq.w, rq.req, err)
			return
		}
		writeProtobuf(rq.w, rq.req, code, typed)
		return
	}
	body, err := obj.MarshalJSON()
	if err != nil {
		writeError(rq.w, rq.req, err)
		return
	}
	writeBodyAs(rq.w, rq.req, code, body, mediaType)
}

// writeResult answers with a write's object, reusing the JSON the write produced if it can.
func (h *Handler) writeResult(rq *request, code int, res objects.Result) {
	if target, ok := routing.NegotiateRead(rq.req.Header.Get("Accept"), false, rq.protobuf); res.Raw != nil && (!ok || target.As == "") {
		h.writeStored(rq, code, responseType(rq), res.Raw)
		return
	}
	h.writeObject(rq, code, res.Object)
}

// writeStored answers with a stored object's JSON in mediaType.
func (h *Handler) writeStored(rq *request, code int, mediaType string, raw []byte) {
	if mediaType == routing.Protobuf {
		typed, err := h.typedFromJSON(rq.resource.GroupVersionKind(), raw)
		if err != nil {
			writeError(rq.w, rq.req, err)
			return
		}
		writeProtobuf(rq.w, rq.req, code, typed)
		return
	}
	writeBodyAs(rq.w, rq.req, code, raw, mediaType)
}

// writeList answers with a list of the resource's objects, items in JSON, in mediaType.
func (h *Handler) writeList(rq *request, code int, mediaType string, meta metav1.ListMeta, items [][]byte, memos []objects.Memo) {
	auditResponseList(rq.req, func() []byte {
		return jsonList(rq.resource.GroupVersion.String(), rq.resource.ListKind, meta, items, !rq.resource.Unstructured).bytes()
	})
	if mediaType == routing.Protobuf {
		list, err := h.protobufList(rq.resource, meta, items, memos)
		if err != nil {
			writeError(rq.w, rq.req, err)
			return
		}
		sendParts(rq.w, rq.req, code, protobufMediaType, list)
		return
	}
	// kube's typed lists leave each item's kind and apiVersion out; custom resources' keep them.
	list := jsonList(rq.resource.GroupVersion.String(), rq.resource.ListKind, meta, items, !rq.resource.Unstructured)
	if mediaType != routing.JSON {
		writeBodyAs(rq.w, rq.req, code, list.bytes(), mediaType)
		return
	}
	sendParts(rq.w, rq.req, code, mediaType, list)
}

// sendParts writes a body made of parts.
func sendParts(w http.ResponseWriter, req *http.Request, code int, contentType string, body *parts) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", strconv.Itoa(body.size))
	w.WriteHeader(code)
	if req.Method != http.MethodHead {
		_ = body.writeTo(w)
	}
}

// parts is a response body made of the pieces it is given, written out without being assembled
// in memory: a list of thousands of objects would otherwise cost a copy of all of them, and its
// garbage collection, per request.
type parts struct {
	pieces [][]byte
	size   int
}

func (p *parts) add(b ...[]byte) {
	for _, piece := range b {
		p.pieces = append(p.pieces, piece)
		p.size += len(piece)
	}
}

// frameChunk is how much of a body is written at a time: what fits one TLS record (16 KiB of
// plaintext) with the 9-byte header of the HTTP/2 DATA frame that carries it. Go's HTTP/2
// server sends a write as DATA frames of at most what the client accepts, 16 KiB from
// client-go and kubectl; written more at a time, every frame took two records and two writes
// to the socket, the second of 9 bytes (an eighth of a large list's CPU, measured). Over
// HTTP/1.1 each write is one record as well.
const frameChunk = 16<<10 - 9

var chunkBuffers = sync.Pool{New: func() any { return new([frameChunk]byte) }}

// writeInFrames writes b frameChunk bytes at a time.
func writeInFrames(w io.Writer, b []byte) error {
	for len(b) > 0 {
		n := min(len(b), frameChunk)
		if _, err := w.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// writeTo writes the body frameChunk bytes at a time.
func (p *parts) writeTo(w io.Writer) error {
	chunk := chunkBuffers.Get().(*[frameChunk]byte)
	defer chunkBuffers.Put(chunk)
	buf := chunk[:0]
	for _, piece := range p.pieces {
		for len(piece) > 0 {
			if len(buf) == cap(buf) {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
			n := min(len(piece), cap(buf)-len(buf))
			buf, piece = append(buf, piece[:n]...), piece[n:]
		}
	}
	_, err := w.Write(buf)
	return err
}

// bytes is the whole body in memory.
func (p *parts) bytes() []byte {
	var b bytes.Buffer
	b.Grow(p.size)
	_ = p.writeTo(&b)
	return b.Bytes()
}

// jsonList is a JSON list around already-encoded items, without their kind and apiVersion if
// asked.
func jsonList(apiVersion, listKind string, meta metav1.ListMeta, items [][]byte, withoutTypes bool) *parts {
	metaJSON, _ := json.Marshal(meta)
	l := &parts{pieces: make([][]byte, 0, 3*len(items)+2)}
	l.add(fmt.Appendf(nil, `{"kind":%q,"apiVersion":%q,"metadata":%s,"items":[`, listKind, apiVersion, metaJSON))
	for i, it := range items {
		if i > 0 {
			l.add(comma)
		}
		switch tail, ok := afterTypeMeta(it); {
		case !withoutTypes:
			l.add(it)
		case ok:
			l.add(openBrace, tail)
		default:
			l.add(withoutTypeMeta(it))
		}
	}
	l.add([]byte("]}"))
	return l
}

var comma, openBrace = []byte{','}, []byte{'{'}

// afterTypeMeta is an object's JSON after its leading apiVersion and kind, where lapis's
// encoding puts them (their values never hold quotes); "{" and the rest make the object
// without them.
func afterTypeMeta(item []byte) ([]byte, bool) {
	const apiVersion, kind = `{"apiVersion":"`, `","kind":"`
	rest, ok := bytes.CutPrefix(item, []byte(apiVersion))
	if !ok {
		return nil, false
	}
	i := bytes.IndexByte(rest, '"')
	if i < 0 || !bytes.HasPrefix(rest[i:], []byte(kind)) {
		return nil, false
	}
	rest = rest[i+len(kind):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || j+1 >= len(rest) || rest[j+1] != ',' {
		return nil, false
	}
	return rest[j+2:], true
}

// withoutTypeMeta is an object's JSON without its apiVersion and kind: cut from the front where
// lapis's encoding puts them (their values never hold quotes), else by decoding.
func withoutTypeMeta(item []byte) []byte {
	if tail, ok := afterTypeMeta(item); ok {
		return append([]byte{'{'}, tail...)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(item, &m); err != nil {
		return item
	}
	delete(m, "apiVersion")
	delete(m, "kind")
	if out, err := json.Marshal(m); err == nil {
		return out
	}
	return item
}

// Bounds on Warning headers, kube-apiserver's (k8s.io/apiserver/pkg/endpoints/filters/warning.go):
// past warningTotalRunes of warning text, every warning is cut to warningItemRunes and those
// that would still go past the total are dropped.
const (
	warningTotalRunes = 4 * 1024
	warningItemRunes  = 256
)

// writeWarnings sets Warning headers (RFC 7234, code 299) as kube-apiserver's warning recorder
// does: each text once, and once their total passes warningTotalRunes, the ones so far again
// cut to warningItemRunes each, later ones cut too and dropped when the total is reached.
func writeWarnings(w http.ResponseWriter, warnings []string) {
	seen := make(map[string]bool, len(warnings))
	var recorded, headers []string
	written, truncating := 0, false
	add := func(text string) {
		if header, err := utilnet.NewWarningHeader(299, "-", text); err == nil {
			written += utf8.RuneCountInString(text)
			headers = append(headers, header)
		}
	}
	for _, text := range warnings {
		if truncating && written >= warningTotalRunes {
			break
		}
		if text == "" || seen[text] {
			continue
		}
		seen[text] = true
		recorded = append(recorded, text)
		switch {
		case truncating:
			add(truncateRunes(text, warningItemRunes))
		case written+utf8.RuneCountInString(text) <= warningTotalRunes:
			add(text)
		default:
			truncating, written, headers = true, 0, headers[:0]
			for _, r := range recorded {
				add(truncateRunes(r, warningItemRunes))
			}
		}
	}
	for _, h := range headers {
		w.Header().Add("Warning", h)
	}
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// checkAcceptable fails with 406 when the client accepts nothing lapis can send.
func checkAcceptable(rq *request) error {
	if err := checkRouteAccepts(rq); err != nil {
		return err
	}
	// A write answers with its object, which a client may ask for as a Table or its metadata.
	if _, ok := routing.NegotiateRead(rq.req.Header.Get("Accept"), false, rq.protobuf); !ok {
		return notAcceptable()
	}
	return nil
}

// Media types kube-apiserver's routes for built-in types produce (collections also stream).
const (
	routeProduces       = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
	collectionsProduces = routeProduces + ", application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
)

// checkRouteAccepts is the first check kube-apiserver makes of a built-in type's request (its
// go-restful routes): an Accept header naming no media type the route produces, parameters
// aside, gets go-restful's 406. Finer mismatches (an unknown `as=`) get notAcceptable.
func checkRouteAccepts(rq *request) error {
	accept := rq.req.Header.Get("Accept")
	if rq.resource.ServedByAPIExtensions || accept == "" {
		return nil
	}
	produced := routeProduces
	if rq.info.Name == "" && (rq.info.Verb == "list" || rq.info.Verb == "watch") {
		produced = collectionsProduces
	}
	for _, each := range strings.Split(accept, ",") {
		mediaType, _, _ := strings.Cut(each, ";")
		mediaType = strings.TrimSpace(mediaType)
		if mediaType == "*/*" || mediaType == routing.JSON || mediaType == routing.YAML || mediaType == routing.Protobuf {
			return nil
		}
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
		Message: "406: Not Acceptable\n\nAvailable representations: " + produced, Details: &metav1.StatusDetails{},
	}}
}

func notAcceptable() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
		// kube-apiserver lists Protobuf for custom resources too, though it serves them only
		// PartialObjectMetadata in it.
		Message: fmt.Sprintf("only the following media types are accepted: %s, %s, %s", routing.JSON, routing.YAML, routing.Protobuf),
	}}
}

func contentType(req *http.Request) string {
	ct := req.Header.Get("Content-Type")
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.TrimSpace(strings.ToLower(ct))
}

// marshalled is the JSON of each object.
func marshalled(items []*unstructured.Unstructured) ([][]byte, error) {
	raws := make([][]byte, 0, len(items))
	for _, u := range items {
		raw, err := u.MarshalJSON()
		if err != nil {
			return nil, err
		}
		raws = append(raws, raw)
	}
	return raws, nil
}

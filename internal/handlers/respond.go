package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

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
	body, _ := json.Marshal(status)
	if retry := status.Details; retry != nil && retry.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(retry.RetryAfterSeconds)))
	}
	writeBody(w, req, int(status.Code), body)
}

// writeBody writes a JSON body in the negotiated media type (JSON unless the client asked for
// YAML; status errors never fail negotiation).
func writeBody(w http.ResponseWriter, req *http.Request, code int, body []byte) {
	mediaType, ok := routing.NegotiateObject(req.Header.Get("Accept"))
	if !ok {
		mediaType = routing.JSON
	}
	writeBodyAs(w, req, code, body, mediaType)
}

// writeBodyAs writes a JSON body in mediaType (JSON or YAML).
func writeBodyAs(w http.ResponseWriter, req *http.Request, code int, body []byte, mediaType string) {
	if mediaType == routing.YAML {
		if y, err := yaml.JSONToYAML(body); err == nil {
			body = y
		} else {
			mediaType = routing.JSON
		}
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	if req.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func writeObject(w http.ResponseWriter, req *http.Request, code int, obj *unstructured.Unstructured) {
	body, err := obj.MarshalJSON()
	if err != nil {
		writeError(w, req, err)
		return
	}
	writeBody(w, req, code, body)
}

// writeWarnings sets Warning headers the way kube-apiserver does (RFC 7234, code 299).
func writeWarnings(w http.ResponseWriter, warnings []string) {
	for _, msg := range warnings {
		w.Header().Add("Warning", "299 - "+strconv.Quote(msg))
	}
}

// checkAcceptable fails with 406 when the client accepts nothing lapis can send.
func checkAcceptable(req *http.Request) error {
	if _, ok := routing.NegotiateObject(req.Header.Get("Accept")); !ok {
		return notAcceptable()
	}
	return nil
}

func notAcceptable() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
		Message: fmt.Sprintf("only the following media types are accepted: %s, %s", routing.JSON, routing.YAML),
	}}
}

// listBody assembles a list response around already-encoded items.
func listBody(apiVersion, listKind string, meta metav1.ListMeta, items [][]byte) []byte {
	metaJSON, _ := json.Marshal(meta)
	n := len(apiVersion) + len(listKind) + len(metaJSON) + 64
	for _, it := range items {
		n += len(it) + 1
	}
	var b bytes.Buffer
	b.Grow(n)
	fmt.Fprintf(&b, `{"kind":%q,"apiVersion":%q,"metadata":`, listKind, apiVersion)
	b.Write(metaJSON)
	b.WriteString(`,"items":[`)
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteString("]}")
	return b.Bytes()
}

func contentType(req *http.Request) string {
	ct := req.Header.Get("Content-Type")
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.TrimSpace(strings.ToLower(ct))
}

package handlers

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/routing"
	"github.com/lapis-dev/lapis/internal/tables"
)

// readTarget negotiates the representation of a read, failing with 406.
func readTarget(rq *request, list bool) (routing.Target, error) {
	if err := checkRouteAccepts(rq); err != nil {
		return routing.Target{}, err
	}
	target, ok := routing.NegotiateRead(rq.req.Header.Get("Accept"), list, rq.protobuf)
	if !ok {
		return target, notAcceptable()
	}
	return target, nil
}

// writeConverted answers a read with items as the Table or metadata target asks for.
func writeConverted(rq *request, target routing.Target, items []*unstructured.Unstructured, meta metav1.ListMeta) {
	writeConvertedAs(rq, http.StatusOK, target, items, meta)
}

// writeConvertedAs is writeConverted with the status code of the answer (a write's).
func writeConvertedAs(rq *request, code int, target routing.Target, items []*unstructured.Unstructured, meta metav1.ListMeta) {
	if target.MediaType == routing.Protobuf {
		writeProtobuf(rq.w, rq.req, code, partialMetadata(target, items, meta))
		return
	}
	body, err := converted(rq, target, items, meta, false)
	if err != nil {
		writeError(rq.w, rq.req, err)
		return
	}
	writeBodyAs(rq.w, rq.req, code, body, target.MediaType)
}

// tableOptions are the request's Table options.
func tableOptions(rq *request, target routing.Target, noHeaders bool) tables.Options {
	return tables.Options{APIVersion: "meta.k8s.io/" + target.Version, NoHeaders: noHeaders,
		IncludeObject: metav1.IncludeObjectPolicy(rq.req.URL.Query().Get("includeObject"))}
}

// converted encodes items as the Table or metadata list the target asks for.
func converted(rq *request, target routing.Target, items []*unstructured.Unstructured, meta metav1.ListMeta, noHeaders bool) ([]byte, error) {
	apiVersion := "meta.k8s.io/" + target.Version
	switch target.As {
	case "Table":
		return tables.Build(rq.resource, items, meta, tableOptions(rq, target, noHeaders))
	case "PartialObjectMetadataList":
		return tables.PartialMetadataList(items, meta, apiVersion)
	case "PartialObjectMetadata":
		return tables.PartialMetadata(items[0], apiVersion)
	}
	return nil, fmt.Errorf("unsupported conversion %q", target.As)
}

func (h *Handler) get(rq *request) error {
	target, err := readTarget(rq, false)
	if err != nil {
		return err
	}
	var opts metav1.GetOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(rq.req.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if target.As == "" {
		raw, err := h.objects.GetRaw(rq.req.Context(), rq.resource, rq.info.Namespace, rq.info.Name, opts.ResourceVersion)
		if err != nil {
			return err
		}
		h.writeStored(rq, http.StatusOK, target.MediaType, raw)
		return nil
	}
	obj, err := h.objects.Get(rq.req.Context(), rq.resource, rq.info.Namespace, rq.info.Name)
	if err != nil {
		return err
	}
	writeConverted(rq, target, []*unstructured.Unstructured{obj}, metav1.ListMeta{ResourceVersion: obj.GetResourceVersion()})
	return nil
}

// listOptions decodes and validates a list or watch query (the legacy /watch/ paths are
// watches without watch=true).
func listOptions(req *http.Request, watching bool) (metainternalversion.ListOptions, error) {
	var o metainternalversion.ListOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(req.URL.Query(), metav1.SchemeGroupVersion, &o); err != nil {
		return o, apierrors.NewBadRequest(err.Error())
	}
	o.Watch = o.Watch || watching
	// WatchList (sendInitialEvents) is on, as in kube-apiserver since it went beta.
	if errs := metainternalversionvalidation.ValidateListOptions(&o, true); len(errs) > 0 {
		return o, apierrors.NewInvalid(optionsGroupKind("ListOptions"), "", errs)
	}
	return o, nil
}

func (h *Handler) list(rq *request) error {
	target, err := readTarget(rq, true)
	if err != nil {
		return err
	}
	opts, err := listOptions(rq.req, false)
	if err != nil {
		return err
	}
	if opts.Watch {
		return h.watch(rq)
	}
	if target.As == "Table" && target.MediaType != routing.Protobuf && tables.Raw(rq.resource) {
		// The printer reads a few fields: the Table is made from the served JSON, undecoded.
		list, err := h.objects.ListRaw(rq.req.Context(), rq.resource, rq.info.Namespace, opts)
		if err != nil {
			return err
		}
		meta := metav1.ListMeta{ResourceVersion: list.ResourceVersion, Continue: list.Continue, RemainingItemCount: list.RemainingItemCount}
		body, err := tables.BuildRaw(rq.resource, list.Items, meta, tableOptions(rq, target, false))
		if err != nil {
			return err
		}
		writeBodyAs(rq.w, rq.req, http.StatusOK, body, target.MediaType)
		return nil
	}
	if target.As != "" {
		items, list, err := h.objects.List(rq.req.Context(), rq.resource, rq.info.Namespace, opts)
		if err != nil {
			return err
		}
		meta := metav1.ListMeta{ResourceVersion: list.ResourceVersion, Continue: list.Continue, RemainingItemCount: list.RemainingItemCount}
		writeConverted(rq, target, items, meta)
		return nil
	}
	list, err := h.objects.ListRaw(rq.req.Context(), rq.resource, rq.info.Namespace, opts)
	if err != nil {
		return err
	}
	meta := metav1.ListMeta{ResourceVersion: list.ResourceVersion, Continue: list.Continue, RemainingItemCount: list.RemainingItemCount}
	h.writeList(rq, http.StatusOK, target.MediaType, meta, list.Items, list.Memos)
	return nil
}

// defaultWatchTimeout bounds watches that ask for no timeout, like kube-apiserver's
// --min-request-timeout (1800s, randomized up to twice that there).
const defaultWatchTimeout = 30 * time.Minute

func (h *Handler) watch(rq *request) error {
	// Watch events carry single objects: metadata clients ask for as=PartialObjectMetadata.
	target, err := readTarget(rq, false)
	if err != nil {
		return err
	}
	opts, err := listOptions(rq.req, true)
	if err != nil {
		return err
	}
	if name := rq.info.Name; name != "" {
		// A watch of one object (/watch/.../NAME) is a watch selecting its name, as kube's.
		if opts.FieldSelector != nil && !opts.FieldSelector.Empty() {
			if selected, ok := opts.FieldSelector.RequiresExactMatch("metadata.name"); !ok || selected != name {
				return apierrors.NewBadRequest("fieldSelector metadata.name doesn't match requested name")
			}
		} else {
			opts.FieldSelector = fields.OneTermEqualSelector("metadata.name", name)
		}
	}
	timeout := defaultWatchTimeout
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds != 0 {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	contentType := routing.JSON
	if target.MediaType == routing.Protobuf {
		contentType = protobufWatchMediaType
	}
	if timeout < 0 {
		// kube-apiserver's watch timer fires at once: an empty stream.
		startWatchStream(rq.w, contentType)
		return nil
	}
	ctx, cancel := context.WithTimeout(rq.req.Context(), timeout)
	defer cancel()
	events, err := h.objects.Watch(ctx, rq.resource, rq.info.Namespace, opts)
	if err != nil {
		return err
	}
	gvr := rq.resource.GroupVersionResource()
	defer h.watches.WatchStarted(gvr, rq.resource.GroupVersionKind())()
	out := &countingWriter{Writer: rq.w}
	encode := jsonWatch(rq, target, out)
	if target.MediaType == routing.Protobuf {
		encode = h.protobufWatch(rq, target, out)
	}
	flusher := startWatchStream(rq.w, contentType)
	for ev := range events {
		out.n = 0
		if err := encode(ev); err != nil {
			return nil // the client went away: nothing left to tell it
		}
		h.watches.WatchEventSent(gvr, out.n)
		if flusher != nil && len(events) == 0 {
			flusher.Flush()
		}
	}
	return nil
}

// startWatchStream sends a watch response's headers; the flusher, if any, pushes events out.
func startWatchStream(w http.ResponseWriter, contentType string) http.Flusher {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	return flusher
}

// jsonWatch returns the encoder of a JSON watch stream written to w: one event a line.
func jsonWatch(rq *request, target routing.Target, w io.Writer) func(objects.WatchEvent) error {
	headersSent := false
	raw := target.MediaType != routing.Protobuf && tables.Raw(rq.resource)
	return func(ev objects.WatchEvent) error {
		// As kube-apiserver's watch encoder, every event but an error is converted, bookmarks too.
		converts := ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted || ev.Type == watch.Bookmark
		if target.As == "Table" && converts && raw {
			// As for lists: the Table is made from the event's JSON, undecoded.
			if rv, err := tables.ResourceVersion(ev.Object); err == nil {
				if body, err := tables.BuildRaw(rq.resource, [][]byte{ev.Object}, metav1.ListMeta{ResourceVersion: rv}, tableOptions(rq, target, headersSent)); err == nil {
					ev.Object, headersSent = body, true
				}
			}
		} else if target.As != "" && converts {
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(ev.Object); err == nil {
				if body, err := converted(rq, target, []*unstructured.Unstructured{obj}, metav1.ListMeta{ResourceVersion: obj.GetResourceVersion()}, headersSent); err == nil {
					ev.Object, headersSent = body, true
				}
			}
		}
		// The object is JSON already (and shared between watchers): frame it without re-encoding.
		line := make([]byte, 0, len(ev.Object)+32)
		line = append(line, `{"type":"`...)
		line = append(line, ev.Type...)
		line = append(line, `","object":`...)
		line = append(line, bytes.TrimRight(ev.Object, "\n")...) // encoders may end with a newline
		line = append(line, '}')
		line = append(line, '\n')
		return writeInFrames(w, line)
	}
}

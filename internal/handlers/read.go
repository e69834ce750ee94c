package handlers

import (
	"encoding/json"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func (h *Handler) get(rq *request) {
	if err := checkAcceptable(rq.req); err != nil {
		writeError(rq.w, rq.req, err)
		return
	}
	var opts metav1.GetOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(rq.req.URL.Query(), metav1.SchemeGroupVersion, &opts); err != nil {
		writeError(rq.w, rq.req, apierrors.NewBadRequest(err.Error()))
		return
	}
	raw, err := h.objects.GetRaw(rq.req.Context(), rq.resource, rq.info.Namespace, rq.info.Name, 0)
	if err != nil {
		writeError(rq.w, rq.req, err)
		return
	}
	if rq.info.Subresource == "status" || rq.info.Subresource == "" {
		writeBody(rq.w, rq.req, http.StatusOK, raw)
		return
	}
	writeError(rq.w, rq.req, apierrors.NewMethodNotSupported(qualified(rq.resource), "get"))
}

// listOptions decodes and validates a list or watch query.
func listOptions(req *http.Request) (metainternalversion.ListOptions, error) {
	var o metainternalversion.ListOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(req.URL.Query(), metav1.SchemeGroupVersion, &o); err != nil {
		return o, apierrors.NewBadRequest(err.Error())
	}
	if errs := metainternalversionvalidation.ValidateListOptions(&o, false); len(errs) > 0 {
		return o, apierrors.NewInvalid(optionsGroupKind("ListOptions"), "", errs)
	}
	return o, nil
}

func (h *Handler) list(rq *request) {
	if err := checkAcceptable(rq.req); err != nil {
		writeError(rq.w, rq.req, err)
		return
	}
	opts, err := listOptions(rq.req)
	if err != nil {
		writeError(rq.w, rq.req, err)
		return
	}
	if opts.Watch {
		h.watch(rq)
		return
	}
	list, err := h.objects.ListRaw(rq.req.Context(), rq.resource, rq.info.Namespace, opts)
	if err != nil {
		writeError(rq.w, rq.req, err)
		return
	}
	meta := metav1.ListMeta{ResourceVersion: list.ResourceVersion, Continue: list.Continue, RemainingItemCount: list.RemainingItemCount}
	writeBody(rq.w, rq.req, http.StatusOK, listBody(rq.resource.GroupVersion.String(), rq.resource.ListKind, meta, list.Items))
}

// defaultWatchTimeout bounds watches that ask for no timeout, like kube-apiserver's
// --min-request-timeout (1800s, randomized up to twice that there).
const defaultWatchTimeout = 30 * time.Minute

func (h *Handler) watch(rq *request) {
	opts, err := listOptions(rq.req)
	if err != nil {
		writeError(rq.w, rq.req, err)
		return
	}
	timeout := defaultWatchTimeout
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds > 0 {
		timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	ctx, cancel := contextWithTimeout(rq.req, timeout)
	defer cancel()
	events, err := h.objects.Watch(ctx, rq.resource, rq.info.Namespace, opts)
	if err != nil {
		writeError(rq.w, rq.req, err)
		return
	}
	flusher, _ := rq.w.(http.Flusher)
	rq.w.Header().Set("Content-Type", "application/json")
	rq.w.Header().Set("Transfer-Encoding", "chunked")
	rq.w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	for ev := range events {
		line, _ := json.Marshal(struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}{string(ev.Type), ev.Object})
		line = append(line, '\n')
		if _, err := rq.w.Write(line); err != nil {
			return
		}
		if flusher != nil && len(events) == 0 {
			flusher.Flush()
		}
	}
}

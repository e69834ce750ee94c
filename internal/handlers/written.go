package handlers

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
)

// asked is what a write's query asked of the pipeline, whichever verb's options carried it;
// what the pipeline decides is objects.WriteOptions.
type asked struct {
	dryRun          []string
	fieldManager    string
	fieldValidation string
}

func askedByCreate(o metav1.CreateOptions) asked {
	return asked{o.DryRun, o.FieldManager, o.FieldValidation}
}
func askedByUpdate(o metav1.UpdateOptions) asked {
	return asked{o.DryRun, o.FieldManager, o.FieldValidation}
}
func askedByPatch(o metav1.PatchOptions) asked {
	return asked{o.DryRun, o.FieldManager, o.FieldValidation}
}

// context is the request's context with what it asked, which admission reads.
func (a asked) context(rq *request) context.Context {
	return catalog.WithRequestOptions(rq.req.Context(), a.dryRun, a.fieldManager, a.fieldValidation)
}

// writeOptions are the pipeline's options for what the request asked, with the body's
// decoding issues; the field manager defaults to the User-Agent's, as kube-apiserver's does.
func (a asked) writeOptions(rq *request, issues []string) objects.WriteOptions {
	return objects.WriteOptions{DryRun: isDryRun(a.dryRun), FieldValidation: a.fieldValidation, DecodeIssues: issues,
		Manager: managerOrUserAgent(a.fieldManager, rq.req.UserAgent())}
}

// answerWrite is the tail every write shares: the pipeline's warnings, then its error or the
// written object with code.
func (h *Handler) answerWrite(rq *request, code int, res objects.Result, err error) error {
	writeWarnings(rq.w, res.Warnings)
	if err != nil {
		return err
	}
	h.writeResult(rq, code, res)
	return nil
}

// readPatch reads a patch request of type pt: its options, then its body, which the audit log
// records.
func readPatch(rq *request, pt types.PatchType) (metav1.PatchOptions, []byte, error) {
	opts, err := patchOptions(rq.req, string(pt))
	if err != nil {
		return opts, nil, err
	}
	body, err := readBody(rq.req)
	if err != nil {
		return opts, nil, err
	}
	auditRequestPatch(rq.req, pt, body)
	return opts, body, nil
}

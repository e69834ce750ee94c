package handlers

import (
	"encoding/json"
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"github.com/lapis-dev/lapis/internal/objects"
)

var scaleGVK = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

// scale serves the scale subresource: get, update, patch (incl. apply) of an autoscaling/v1 Scale.
func (h *Handler) scale(rq *request) {
	if err := checkAcceptable(rq); err != nil {
		writeError(rq.w, rq.req, err)
		return
	}
	ctx := rq.req.Context()
	switch rq.info.Verb {
	case "get":
		scale, err := h.objects.GetScale(ctx, rq.resource, rq.info.Namespace, rq.info.Name)
		if err != nil {
			writeError(rq.w, rq.req, err)
			return
		}
		h.writeObject(rq, http.StatusOK, scale)
	case "update":
		opts, err := updateOptions(rq.req)
		if err != nil {
			writeError(rq.w, rq.req, err)
			return
		}
		body, _, err := h.readObject(rq.req, scaleGVK)
		if err != nil {
			writeError(rq.w, rq.req, err)
			return
		}
		if err := checkScaleKind(body); err != nil {
			writeError(rq.w, rq.req, err)
			return
		}
		mutate := func(current *unstructured.Unstructured, _ *managedfields.FieldManager) (*unstructured.Unstructured, error) {
			next := body.DeepCopy()
			if next.GetManagedFields() == nil {
				next.SetManagedFields(current.GetManagedFields())
			}
			return next, nil
		}
		h.writeScale(rq, mutate, true, objects.WriteOptions{DryRun: isDryRun(opts.DryRun), FieldValidation: opts.FieldValidation,
			Manager: managerOrUserAgent(opts.FieldManager, rq.req.UserAgent())})
	case "patch":
		pt := patchTypeOf(contentType(rq.req))
		opts, err := patchOptions(rq.req, string(pt))
		if err != nil {
			writeError(rq.w, rq.req, err)
			return
		}
		patch, err := readBody(rq.req)
		if err != nil {
			writeError(rq.w, rq.req, err)
			return
		}
		wo := objects.WriteOptions{DryRun: isDryRun(opts.DryRun), FieldValidation: opts.FieldValidation,
			Manager: managerOrUserAgent(opts.FieldManager, rq.req.UserAgent())}
		if pt == types.ApplyYAMLPatchType {
			data, err := toJSON("application/yaml", patch)
			if err != nil {
				writeError(rq.w, rq.req, err)
				return
			}
			config, _, err := decodeObject(data, "Scale")
			if err != nil {
				writeError(rq.w, rq.req, err)
				return
			}
			force := opts.Force != nil && *opts.Force
			h.writeScale(rq, func(current *unstructured.Unstructured, fm *managedfields.FieldManager) (*unstructured.Unstructured, error) {
				merged, err := fm.Apply(current, config, opts.FieldManager, force)
				if err != nil {
					var status apierrors.APIStatus
					if errors.As(err, &status) {
						return nil, err
					}
					return nil, apierrors.NewBadRequest(err.Error())
				}
				return merged.(*unstructured.Unstructured), nil
			}, false, wo)
			return
		}
		pinned := patchSetsResourceVersion(pt, patch)
		h.writeScale(rq, func(current *unstructured.Unstructured, _ *managedfields.FieldManager) (*unstructured.Unstructured, error) {
			currentJSON, err := json.Marshal(current.Object)
			if err != nil {
				return nil, err
			}
			patched, err := h.applyPatchAs(rq, pt, scaleGVK, currentJSON, patch)
			if err != nil {
				return nil, err
			}
			obj, _, err := decodeObject(patched, "Scale")
			if err != nil {
				return nil, err
			}
			if !pinned {
				obj.SetResourceVersion("")
			}
			return obj, nil
		}, true, wo)
	default:
		writeError(rq.w, rq.req, apierrors.NewMethodNotSupported(schema.GroupResource{Group: rq.resource.GroupVersion.Group, Resource: rq.resource.Name + "/scale"}, rq.info.Verb))
	}
}

func (h *Handler) writeScale(rq *request, mutate objects.ScaleMutation, track bool, wo objects.WriteOptions) {
	res, err := h.objects.UpdateScale(rq.req.Context(), rq.resource, rq.info.Namespace, rq.info.Name, mutate, track, wo)
	writeWarnings(rq.w, res.Warnings)
	if err != nil {
		writeError(rq.w, rq.req, err)
		return
	}
	h.writeObject(rq, http.StatusOK, res.Object)
}

func checkScaleKind(obj *unstructured.Unstructured) error {
	if obj.GetAPIVersion() != "autoscaling/v1" || obj.GetKind() != "Scale" {
		return apierrors.NewBadRequest("the API version in the data (" + obj.GetAPIVersion() + ") does not match the expected API version (autoscaling/v1)")
	}
	return nil
}

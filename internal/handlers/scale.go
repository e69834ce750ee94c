package handlers

import (
	"encoding/json"
	"net/http"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/lapis-dev/lapis/internal/objects"
)

var scaleGVK = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

// scale serves the scale subresource: get, update, patch (incl. apply) of an autoscaling/v1 Scale.
func (h *Handler) scale(rq *request) error {
	if err := checkAcceptable(rq); err != nil {
		return err
	}
	switch rq.info.Verb {
	case "get":
		scale, err := h.objects.GetScale(rq.req.Context(), rq.resource, rq.info.Namespace, rq.info.Name)
		if err != nil {
			return err
		}
		h.writeObject(rq, http.StatusOK, scale)
		return nil
	case "update":
		return h.updateScale(rq)
	case "patch":
		return h.patchScale(rq)
	}
	return apierrors.NewMethodNotSupported(schema.GroupResource{Group: rq.resource.GroupVersion.Group, Resource: rq.resource.Name + "/scale"}, rq.info.Verb)
}

func (h *Handler) updateScale(rq *request) error {
	opts, err := updateOptions(rq.req)
	if err != nil {
		return err
	}
	body, _, err := h.readObject(rq.req, scaleGVK)
	if err != nil {
		return err
	}
	if err := checkScaleKind(body); err != nil {
		return err
	}
	if err := checkName(body, rq.info.Name, rq.info.Namespace); err != nil {
		return err
	}
	mutate := func(current *unstructured.Unstructured, _ *managedfields.FieldManager) (*unstructured.Unstructured, error) {
		next := body.DeepCopy()
		if next.GetManagedFields() == nil {
			next.SetManagedFields(current.GetManagedFields())
		}
		return next, nil
	}
	return h.writeScale(rq, mutate, objects.RecordScaleFields, askedByUpdate(opts).writeOptions(rq, nil))
}

func (h *Handler) patchScale(rq *request) error {
	pt := patchTypeOf(contentType(rq.req))
	opts, patch, err := readPatch(rq, pt)
	if err != nil {
		return err
	}
	wo := askedByPatch(opts).writeOptions(rq, nil)
	if pt != types.ApplyYAMLPatchType {
		return h.writeScale(rq, h.patchedScale(rq, pt, patch), objects.RecordScaleFields, wo)
	}
	data, err := toJSON("application/yaml", patch)
	if err != nil {
		return err
	}
	config, _, err := decodeObject(data, "Scale")
	if err != nil {
		return err
	}
	return h.writeScale(rq, func(current *unstructured.Unstructured, fm *managedfields.FieldManager) (*unstructured.Unstructured, error) {
		return objects.MergeApplied(fm, current, config, opts.FieldManager, forced(opts))
	}, objects.ScaleFieldsMerged, wo)
}

// patchedScale patches a Scale as kube patches it: its own encoding of the Scale, fields in
// their Go order, which its errors quote.
func (h *Handler) patchedScale(rq *request, pt types.PatchType, patch []byte) objects.ScaleMutation {
	pinned := patchSetsResourceVersion(pt, patch)
	return func(current *unstructured.Unstructured, _ *managedfields.FieldManager) (*unstructured.Unstructured, error) {
		var scale autoscalingv1.Scale
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current.Object, &scale); err != nil {
			return nil, err
		}
		currentJSON, err := json.Marshal(&scale)
		if err != nil {
			return nil, err
		}
		patched, err := h.applyPatchAs(rq, pt, scaleGVK, currentJSON, patch)
		if err != nil {
			return nil, err
		}
		if pt != types.StrategicMergePatchType {
			// kube decodes the patched Scale into its Go type: values of the wrong type are
			// the patch's fault (the strategic merge patch checks this as it applies).
			if err := kjson.UnmarshalCaseSensitivePreserveInts(patched, &autoscalingv1.Scale{}); err != nil {
				return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
					field.Invalid(field.NewPath("patch"), string(patched), err.Error())})
			}
		}
		obj, _, err := decodeObject(patched, "Scale")
		if err != nil {
			return nil, err
		}
		if !pinned {
			obj.SetResourceVersion("")
		}
		return obj, nil
	}
}

func (h *Handler) writeScale(rq *request, mutate objects.ScaleMutation, fields objects.ScaleFields, wo objects.WriteOptions) error {
	res, err := h.objects.UpdateScale(rq.req.Context(), rq.resource, rq.info.Namespace, rq.info.Name, mutate, fields, wo)
	return h.answerWrite(rq, http.StatusOK, res, err)
}

func checkScaleKind(obj *unstructured.Unstructured) error {
	if obj.GetAPIVersion() != "autoscaling/v1" || obj.GetKind() != "Scale" {
		return apierrors.NewBadRequest("the API version in the data (" + obj.GetAPIVersion() + ") does not match the expected API version (autoscaling/v1)")
	}
	return nil
}

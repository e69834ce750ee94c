package special

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
	"k8s.io/utils/ptr"
	kjson "sigs.k8s.io/json"

	"github.com/lapis-dev/lapis/internal/handlers"
	"github.com/lapis-dev/lapis/internal/objects"
)

// What follows is kube's ScaleREST (pkg/registry/apps/deployment/storage and apiextensions'
// custom resource scale) over lapis's objects: an autoscaling/v1 Scale read from and written
// into the resource's replicas, its field managers' entries kept as the resource's.

var scaleGVK = schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

// scales is the scale subresource of every resource that has one.
type scales struct{ objects *objects.Service }

var _ handlers.Endpoint = (*scales)(nil)

// Serve gets, updates or patches (apply included) a resource's Scale.
func (s *scales) Serve(rq *handlers.Request) error {
	if err := rq.CheckAcceptable(); err != nil {
		return err
	}
	info := rq.Info()
	switch info.Verb {
	case "get":
		scale, err := s.objects.GetScale(rq.Context(), rq.Resource(), info.Namespace, info.Name)
		if err != nil {
			return err
		}
		rq.RespondObject(http.StatusOK, scale)
		return nil
	case "update":
		return s.update(rq)
	case "patch":
		return s.patch(rq)
	}
	r := rq.Resource()
	return apierrors.NewMethodNotSupported(schema.GroupResource{Group: r.GroupVersion.Group, Resource: r.Name + "/scale"}, info.Verb)
}

func (s *scales) update(rq *handlers.Request) error {
	body, opts, err := rq.DecodeUpdate(scaleGVK)
	if err != nil {
		return err
	}
	if err := checkScaleKind(body); err != nil {
		return err
	}
	if err := rq.CheckName(body); err != nil {
		return err
	}
	mutate := func(current *unstructured.Unstructured, _ *managedfields.FieldManager) (*unstructured.Unstructured, error) {
		next := body.DeepCopy()
		if next.GetManagedFields() == nil {
			next.SetManagedFields(current.GetManagedFields())
		}
		return next, nil
	}
	return s.write(rq, mutate, objects.RecordScaleFields, rq.UpdateWriteOptions(opts))
}

func (s *scales) patch(rq *handlers.Request) error {
	pt, opts, patch, err := rq.DecodePatch()
	if err != nil {
		return err
	}
	wo := rq.PatchWriteOptions(opts)
	if pt != types.ApplyYAMLPatchType {
		return s.write(rq, patchedScale(rq, pt, patch), objects.RecordScaleFields, wo)
	}
	config, err := handlers.DecodeYAMLObject(patch, "Scale")
	if err != nil {
		return err
	}
	return s.write(rq, func(current *unstructured.Unstructured, fm *managedfields.FieldManager) (*unstructured.Unstructured, error) {
		return objects.MergeApplied(fm, current, config, opts.FieldManager, ptr.Deref(opts.Force, false))
	}, objects.ScaleFieldsMerged, wo)
}

// patchedScale patches a Scale as kube patches it: its own encoding of the Scale, fields in
// their Go order, which its errors quote.
func patchedScale(rq *handlers.Request, pt types.PatchType, patch []byte) objects.ScaleMutation {
	pinned := handlers.PatchSetsResourceVersion(pt, patch)
	return func(current *unstructured.Unstructured, _ *managedfields.FieldManager) (*unstructured.Unstructured, error) {
		var scale autoscalingv1.Scale
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current.Object, &scale); err != nil {
			return nil, err
		}
		currentJSON, err := json.Marshal(&scale)
		if err != nil {
			return nil, err
		}
		patched, err := rq.Patch(pt, scaleGVK, currentJSON, patch)
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
		obj, err := handlers.DecodeObject(patched, "Scale")
		if err != nil {
			return nil, err
		}
		if !pinned {
			obj.SetResourceVersion("")
		}
		return obj, nil
	}
}

func (s *scales) write(rq *handlers.Request, mutate objects.ScaleMutation, fields objects.ScaleFields, wo objects.WriteOptions) error {
	info := rq.Info()
	res, err := s.objects.UpdateScale(rq.Context(), rq.Resource(), info.Namespace, info.Name, mutate, fields, wo)
	return rq.RespondWrite(http.StatusOK, res, err)
}

func checkScaleKind(obj *unstructured.Unstructured) error {
	if obj.GetAPIVersion() != "autoscaling/v1" || obj.GetKind() != "Scale" {
		return apierrors.NewBadRequest("the API version in the data (" + obj.GetAPIVersion() + ") does not match the expected API version (autoscaling/v1)")
	}
	return nil
}

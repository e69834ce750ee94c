package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kjson "k8s.io/apimachinery/pkg/util/json"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/yaml"
)

// What kube-apiserver's REST handlers add to a request's audit event (k8s.io/apiserver's
// endpoints/handlers): the request object (create, update, delete options, a patch), which also
// names the object in the event's objectRef, and the response object or Status. kube's own
// audit functions decide per level what is kept (Secret data never below Request) and drop
// managed fields when the policy says so; lapis gives them its objects as JSON.

// auditLevel is the level the request's audit event is recorded at (None when not audited).
func auditLevel(ctx context.Context) auditinternal.Level {
	ac := audit.AuditContextFrom(ctx)
	if !ac.Enabled() {
		return auditinternal.LevelNone
	}
	return ac.GetEventLevel()
}

// auditRequestObject records a decoded request body (create, update, a subresource's body,
// delete options), as kube's create, update and delete handlers do.
func auditRequestObject(req *http.Request, obj runtime.Object) {
	ctx := req.Context()
	if auditLevel(ctx).Less(auditinternal.LevelMetadata) {
		return
	}
	info, _ := apirequest.RequestInfoFrom(ctx)
	var gvr schema.GroupVersionResource
	var subresource string
	if info != nil {
		gvr = schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
		subresource = info.Subresource
	}
	audit.LogRequestObject(ctx, obj, obj.GetObjectKind().GroupVersionKind().GroupVersion(), gvr, subresource, auditCodecs)
}

// auditRequestBody is auditRequestObject for an object decoded from a request body: kube decodes
// a body with the type's defaults applied, into its Go type, and records it so, from Request
// level.
func (h *Handler) auditRequestBody(req *http.Request, obj *unstructured.Unstructured) {
	if auditLevel(req.Context()).Less(auditinternal.LevelRequest) {
		auditRequestObject(req, obj)
		return
	}
	info, _ := apirequest.RequestInfoFrom(req.Context())
	if info == nil {
		return
	}
	r, ok := h.objects.Catalog().Lookup(schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource})
	if ok && r.Behavior != nil && r.GroupVersionKind() == obj.GroupVersionKind() {
		obj = obj.DeepCopy()
		r.Behavior.Default(obj)
	}
	// kube records built-in kinds from their Go types: zero values that are not omitted
	// (metadata: {}, a review's status) are there too.
	if typed, err := h.typedFromUnstructured(obj); err == nil {
		auditRequestObject(req, typed)
		return
	}
	auditRequestObject(req, obj)
}

// auditRequestPatch records a patch, in JSON, as kube's patch handler does.
func auditRequestPatch(req *http.Request, pt types.PatchType, patch []byte) {
	ctx := req.Context()
	if auditLevel(ctx).Less(auditinternal.LevelRequest) {
		return
	}
	if pt == types.ApplyYAMLPatchType {
		converted, err := yaml.YAMLToJSON(patch)
		if err != nil {
			return // refused later as kube refuses it
		}
		patch = converted
	} else if !json.Valid(patch) {
		return
	}
	audit.LogRequestPatch(ctx, patch)
}

// auditResponse records the answer's object: its Status from Metadata level (code, reason,
// message), the whole object at RequestResponse, as kube's response writers do.
func auditResponse(req *http.Request, obj runtime.Object) {
	ctx := req.Context()
	level := auditLevel(ctx)
	if level.Less(auditinternal.LevelMetadata) {
		return
	}
	if _, ok := obj.(*metav1.Status); !ok && level.Less(auditinternal.LevelRequestResponse) {
		return
	}
	audit.LogResponseObject(ctx, obj, obj.GetObjectKind().GroupVersionKind().GroupVersion(), auditCodecs)
}

// auditResponseJSON is auditResponse for an answer lapis has as JSON: decoded only when the
// event keeps response objects.
func auditResponseJSON(req *http.Request, body []byte) {
	if auditLevel(req.Context()).Less(auditinternal.LevelRequestResponse) {
		return
	}
	u := &unstructured.Unstructured{}
	if err := kjson.Unmarshal(body, &u.Object); err != nil || u.Object == nil {
		return
	}
	auditResponse(req, u)
}

// auditResponseList is auditResponseJSON for a list lapis writes in pieces.
func auditResponseList(req *http.Request, list func() []byte) {
	if auditLevel(req.Context()).Less(auditinternal.LevelRequestResponse) {
		return
	}
	auditResponseJSON(req, list())
}

// auditCodecs encode what lapis hands the audit functions (unstructured objects, Go types of
// k8s.io/api and meta/v1) as JSON, as they are: lapis's objects are already at the version
// the client used.
var auditCodecs = runtime.NewSimpleNegotiatedSerializer(runtime.SerializerInfo{
	MediaType: runtime.ContentTypeJSON, MediaTypeType: "application", MediaTypeSubType: "json",
	EncodesAsText: true, Serializer: jsonAsIs{},
})

// jsonAsIs encodes an object with encoding/json (unstructured objects marshal their map).
type jsonAsIs struct{}

func (jsonAsIs) Encode(obj runtime.Object, w io.Writer) error { return json.NewEncoder(w).Encode(obj) }

func (jsonAsIs) Decode([]byte, *schema.GroupVersionKind, runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	return nil, nil, errors.New("audit encoding only")
}

func (jsonAsIs) Identifier() runtime.Identifier { return "lapis-audit-json" }

// auditDeleteOptions records the DeleteOptions a DELETE's body gave, as kube's delete handlers
// do: whatever version the body named, kube records them as meta.k8s.io/__internal (the
// version its decoder reports for them).
func auditDeleteOptions(req *http.Request, o metav1.DeleteOptions) {
	o.TypeMeta = metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.Group + "/" + runtime.APIVersionInternal, Kind: "DeleteOptions"}
	auditRequestObject(req, &o)
}

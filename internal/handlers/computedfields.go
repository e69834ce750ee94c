package handlers

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/openapi"
)

// fieldManagers are the field managers of the computed resources, built on first use.
type fieldManagers struct {
	mu sync.Mutex
	m  map[*catalog.Resource]*managedfields.FieldManager
}

func (f *fieldManagers) of(r *catalog.Resource) *managedfields.FieldManager {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fm, ok := f.m[r]; ok {
		return fm
	}
	var fm *managedfields.FieldManager
	types, err := managedfields.NewTypeConverter(openapi.Models([]*catalog.Resource{r}), false)
	if err == nil {
		s := legacyscheme.Scheme
		fm, _ = managedfields.NewDefaultFieldManager(types, s, s, s, r.GroupVersionKind(), r.GroupVersion, "", nil)
	}
	if f.m == nil {
		f.m = map[*catalog.Resource]*managedfields.FieldManager{}
	}
	f.m[r] = fm // nil when it cannot be built: the review goes without managedFields
	return fm
}

// trackComputedFields records the request's fields in obj's managedFields, as kube-apiserver's
// create handler does before its REST endpoint sees the object (reviews answer with them).
// Failures leave obj as it was, as kube's UpdateNoErrors does.
func (h *Handler) trackComputedFields(rq *request, obj runtime.Object, manager string) {
	fm := h.computed.fields.of(rq.resource)
	if fm == nil {
		return
	}
	s := legacyscheme.Scheme
	versioned, err := s.ConvertToVersion(obj.DeepCopyObject(), rq.resource.GroupVersion)
	if err != nil {
		return
	}
	live, err := s.New(rq.resource.GroupVersionKind())
	if err != nil {
		return
	}
	tracked := fm.UpdateNoErrors(live, versioned, managerOrUserAgent(manager, rq.req.UserAgent()))
	_ = s.Convert(tracked, obj, nil)
}

package fieldmanager

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/openapi"
)

// Computed hands out the FieldManagers of what kube-apiserver computes rather than stores
// (reviews, TokenRequests): kube's create handler records a request's fields in the answer's
// managedFields. Their objects are kube's Go types (legacyscheme), typed by the OpenAPI
// definitions of their kinds. Each is built once; the zero value is ready to use.
type Computed struct {
	mu    sync.Mutex
	cache map[key]*managedfields.FieldManager
}

// For returns the FieldManager of r's objects written through subresource ("" for r itself);
// nil when it cannot be built.
func (c *Computed) For(r *catalog.Resource, subresource string) *managedfields.FieldManager {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := key{r, subresource}
	if fm, ok := c.cache[k]; ok {
		return fm
	}
	var fm *managedfields.FieldManager
	types, err := managedfields.NewTypeConverter(openapi.Models([]*catalog.Resource{r}), false)
	if err == nil {
		s := legacyscheme.Scheme
		fm, _ = managedfields.NewDefaultFieldManager(types, s, s, s, r.GroupVersionKind(), r.GroupVersion, subresource, nil)
	}
	if c.cache == nil {
		c.cache = map[key]*managedfields.FieldManager{}
	}
	c.cache[k] = fm // nil too: the answer goes without managedFields
	return fm
}

// Track records obj's fields, as sent, in its managedFields as manager's (obj is of kube's
// internal version), as kube-apiserver's create handler does before its REST endpoint sees the
// object. Failures leave obj as it was, as kube's UpdateNoErrors does.
func (c *Computed) Track(r *catalog.Resource, subresource string, obj runtime.Object, manager string) {
	fm := c.For(r, subresource)
	if fm == nil {
		return
	}
	s := legacyscheme.Scheme
	versioned, err := s.ConvertToVersion(obj.DeepCopyObject(), r.GroupVersion)
	if err != nil {
		return
	}
	live, err := s.New(r.GroupVersionKind())
	if err != nil {
		return
	}
	tracked := fm.UpdateNoErrors(live, versioned, manager)
	_ = s.Convert(tracked, obj, nil)
}

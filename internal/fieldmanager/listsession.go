package fieldmanager

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/fieldmanager/conventions"
	"github.com/lapis-dev/lapis/internal/openapi"
)

// listConventions is the field-management schema of a custom resource whose CRD opts into
// convention-based lists (conventions.Annotation): its OpenAPI models, and the SMD type
// converters built from them with some lists marked as list maps, one per set of decisions.
//
// SMD merges two typed values only if they were typed with the very same schema, and its
// schema is static per type; the convention is a property of the data. So each merge gets a
// listSession that sees every object the merge handles before it is typed, decides from all of
// them at once, and hands SMD the converter of those decisions, shared by every merge that
// decides the same (so equal decisions give equal schema pointers).
type listConventions struct {
	keys     []string
	models   map[string]*spec.Schema // every version's models; roots replaced per decision set
	roots    map[schema.GroupVersionKind]string
	schemas  map[string]*spec.Schema // by apiVersion: the root schema of that version (nil: none)
	own      string                  // the apiVersion decisions are checked against
	preserve bool

	mu         sync.Mutex
	converters map[string]managedfields.TypeConverter // by decision signature
}

// maxConverters bounds the converters kept per resource: a resource's objects rarely take more
// than a few shapes; past the bound the cache starts over rather than grow without end.
const maxConverters = 128

func newListConventions(r *catalog.Resource) (*listConventions, error) {
	c := &listConventions{
		keys:       conventions.MergeKeys(),
		roots:      map[schema.GroupVersionKind]string{},
		schemas:    map[string]*spec.Schema{},
		own:        r.GroupVersion.String(),
		converters: map[string]managedfields.TypeConverter{},
	}
	versions := crdVersions(r)
	v := r.CRDVersion
	if v == nil || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		// No schema: every version is untyped (as kube's deduced converter), with one root
		// model each to mark lists in.
		c.models = map[string]*spec.Schema{}
		for _, at := range versions {
			gvk := at.GroupVersionKind()
			name := fmt.Sprintf("lapis.untyped.%s.%s.%s", gvk.Group, gvk.Version, gvk.Kind)
			root := untypedNode()
			root.Type = spec.StringOrArray{"object"}
			root.Extensions["x-kubernetes-group-version-kind"] = []any{map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}}
			c.models[name] = root
			c.roots[gvk] = name
			c.schemas[gvk.GroupVersion().String()] = nil
		}
		return c, nil
	}
	c.preserve = r.CRD.Spec.PreserveUnknownFields
	if s := v.Schema.OpenAPIV3Schema; s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		c.preserve = true
	}
	c.models = openapi.Models(versions)
	for _, at := range versions {
		gvk := at.GroupVersionKind()
		for name, m := range c.models {
			if hasGVK(m, gvk) {
				c.roots[gvk] = name
				c.schemas[gvk.GroupVersion().String()] = m
			}
		}
	}
	return c, nil
}

func hasGVK(m *spec.Schema, gvk schema.GroupVersionKind) bool {
	list, _ := m.Extensions["x-kubernetes-group-version-kind"].([]any)
	for _, item := range list {
		var g, v, k any
		switch item := item.(type) {
		case map[string]any:
			g, v, k = item["group"], item["version"], item["kind"]
		case map[any]any:
			g, v, k = item["group"], item["version"], item["kind"]
		}
		if g == gvk.Group && v == gvk.Version && k == gvk.Kind {
			return true
		}
	}
	return false
}

// converter returns the type converter for a set of decisions, building it on first use.
func (c *listConventions) converter(ds []listDecision) (managedfields.TypeConverter, error) {
	sig := signature(ds)
	c.mu.Lock()
	tc, ok := c.converters[sig]
	c.mu.Unlock()
	if ok {
		return tc, nil
	}
	models := c.models
	if len(ds) > 0 {
		models = make(map[string]*spec.Schema, len(c.models))
		for name, m := range c.models {
			models[name] = m
		}
		for gvk, name := range c.roots {
			root := c.schemas[gvk.GroupVersion().String()]
			marked := markLists(root, ds)
			if root == nil {
				// markLists made an untyped root: keep the model's group-version-kind.
				marked.Extensions["x-kubernetes-group-version-kind"] = c.models[name].Extensions["x-kubernetes-group-version-kind"]
			}
			models[name] = marked
		}
	}
	tc, err := managedfields.NewTypeConverter(models, c.preserve)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if existing, ok := c.converters[sig]; ok {
		return existing, nil // built concurrently: the first one is the one merges share
	}
	if len(c.converters) >= maxConverters {
		c.converters = map[string]managedfields.TypeConverter{}
	}
	c.converters[sig] = tc
	return tc, nil
}

// listSession is the converter side of one request's merges: every object the field manager
// converts between versions or types is observed first, and each typing decides from all that
// was observed. Within one SMD operation the live object is converted to its version (and so
// observed) before the applied configuration or new object is typed, so both are typed with
// the same decisions. A session belongs to one request: For hands out a new one each call.
type listSession struct {
	conv *listConventions

	mu       sync.Mutex // a session is used by one goroutine; the lock only keeps it sound
	facts    *listFactSet
	observed map[*unstructured.Unstructured]bool
}

func newListSession(c *listConventions) *listSession {
	return &listSession{conv: c, facts: newListFactSet(c.keys), observed: map[*unstructured.Unstructured]bool{}}
}

func (s *listSession) observe(obj runtime.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || s.observed[u] {
		return
	}
	s.observed[u] = true
	if root, ok := s.conv.schemas[u.GetAPIVersion()]; ok {
		s.facts.addObject(u.Object, root)
	}
	if mf, found, _ := unstructured.NestedSlice(u.Object, "metadata", "managedFields"); found && len(mf) > 0 {
		s.facts.addManaged(u.GetManagedFields())
	}
}

// decisions observes obj and decides from everything seen so far.
func (s *listSession) decisions(obj runtime.Object) []listDecision {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.observe(obj)
	return decide(s.facts, s.conv.schemas[s.conv.own])
}

// sessionTypes is the session's TypeConverter.
type sessionTypes struct{ s *listSession }

func (t sessionTypes) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	tc, err := t.s.conv.converter(t.s.decisions(obj))
	if err != nil {
		return nil, err
	}
	return tc.ObjectToTyped(obj, opts...)
}

func (t sessionTypes) TypedToObject(v *typed.TypedValue) (runtime.Object, error) {
	return managedfields.NewDeducedTypeConverter().TypedToObject(v)
}

// sessionObjects are the resource's unstructuredObjects, observing what they convert.
type sessionObjects struct {
	unstructuredObjects
	s *listSession
}

func (o sessionObjects) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	o.s.mu.Lock()
	o.s.observe(in)
	o.s.mu.Unlock()
	out, err := o.unstructuredObjects.ConvertToVersion(in, target)
	if err == nil {
		o.s.mu.Lock()
		o.s.observe(out)
		o.s.mu.Unlock()
	}
	return out, err
}

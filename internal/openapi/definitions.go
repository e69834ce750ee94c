package openapi

import (
	"maps"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/schemamutation"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/lapis-dev/lapis/internal/catalog"
	kubeopenapi "k8s.io/kubernetes/pkg/generated/openapi"
)

// Model names of the apimachinery types every document refers to.
const (
	objectMetaModel    = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
	listMetaModel      = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
	typeMetaModel      = "io.k8s.apimachinery.pkg.apis.meta.v1.TypeMeta"
	statusModel        = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
	deleteOptionsModel = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
	patchModel         = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
	listOptionsModel   = "io.k8s.apimachinery.pkg.apis.meta.v1.ListOptions"
	createOptionsModel = "io.k8s.apimachinery.pkg.apis.meta.v1.CreateOptions"
	patchOptionsModel  = "io.k8s.apimachinery.pkg.apis.meta.v1.PatchOptions"
	scaleModel         = "io.k8s.api.autoscaling.v1.Scale"

	gvkExtension = "x-kubernetes-group-version-kind"
)

// flavour is the OpenAPI version a schema is prepared for: v2 documents keep definitions under
// #/definitions/ and carry no defaults (kube prunes them); v3 documents keep them under
// #/components/schemas/ and wrap references that have siblings in allOf.
type flavour struct {
	v2     bool
	prefix string
}

var (
	v2 = flavour{v2: true, prefix: "#/definitions/"}
	v3 = flavour{prefix: "#/components/schemas/"}
)

func (f flavour) ref(model string) spec.Ref { return spec.MustCreateRef(f.prefix + model) }

// refSchema is a schema that is only a reference to model.
func (f flavour) refSchema(model string) *spec.Schema {
	return &spec.Schema{SchemaProps: spec.SchemaProps{Ref: f.ref(model)}}
}

// finish brings a schema into the flavour's form.
func (f flavour) finish(s *spec.Schema) *spec.Schema {
	if f.v2 {
		return walk(s, pruneDefault)
	}
	return walk(s, wrapRef)
}

// definition is a named schema and the models it refers to.
type definition struct {
	schema spec.Schema
	deps   []string
}

// builtinV2 and builtinV3 memoise loadBuiltin, a pure function of the flavour.
var builtinV2, builtinV3 = &defsMemo{f: v2, keep: keepDefs}, &defsMemo{f: v3, keep: keepDefs}

func builtin(f flavour) map[string]definition {
	if f.v2 {
		return builtinV2.get()
	}
	return builtinV3.get()
}

// keepDefs is how long prepared definitions are kept unused before they are dropped.
const keepDefs = 5 * time.Second

// defsMemo keeps one flavour's prepared definitions while they are in use. Preparing them takes
// ~25 ms of CPU, and they take about 8 MiB (v3) and 4 MiB (v2) of heap that nothing needs once
// the documents are encoded and the type converters built: idle for keep, they are dropped and
// the memory handed back to the system (the next catalogue change prepares them again).
type defsMemo struct {
	f    flavour
	keep time.Duration

	mu    sync.Mutex
	defs  map[string]definition
	used  bool        // since the timer was last armed
	timer *time.Timer // nil while defs is nil
}

func (m *defsMemo) get() map[string]definition {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.defs == nil {
		m.defs = loadBuiltin(m.f)
		m.timer = time.AfterFunc(m.keep, m.expire)
	}
	m.used = true
	return m.defs
}

// expire drops the definitions if they were not used since it was last armed.
func (m *defsMemo) expire() {
	m.mu.Lock()
	if m.used {
		m.used = false
		m.timer.Reset(m.keep)
		m.mu.Unlock()
		return
	}
	m.defs, m.timer = nil, nil
	m.mu.Unlock()
	// A GC at idle may be minutes away, and the scavenger returns pages slowly.
	debug.FreeOSMemory()
}

// loaded says whether the definitions are held (for tests).
func (m *defsMemo) loaded() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.defs != nil
}

// loadBuiltin prepares the generated definitions for one flavour.
func loadBuiltin(f flavour) map[string]definition {
	gen := kubeopenapi.GetOpenAPIDefinitions(f.ref) // every type kube-apiserver 1.37 serves
	out := make(map[string]definition, len(gen))
	for name, d := range gen {
		s := d.Schema
		if alt, ok := s.Extensions[common.ExtensionV2Schema]; ok {
			// Types such as IntOrString and Quantity have a simpler v2 form.
			if alt, isSchema := alt.(spec.Schema); isSchema && f.v2 {
				s = alt
			} else {
				s.Extensions = maps.Clone(s.Extensions)
				delete(s.Extensions, common.ExtensionV2Schema)
			}
		}
		out[name] = definition{schema: *f.finish(&s), deps: d.Dependencies}
	}
	return out
}

// builtinModel returns the model name of a built-in kind, or "" if openapi-gen has not generated
// it. Types of k8s.io/api live in io.k8s.api.<package>, the package being the group's first label
// ("core" for the legacy group).
func builtinModel(gv schema.GroupVersion, kind string) string {
	var pkg string
	switch {
	case gv.Group == "":
		pkg = "io.k8s.api.core"
	case gv.Group == "apiextensions.k8s.io":
		pkg = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions"
	default:
		pkg = "io.k8s.api." + strings.SplitN(gv.Group, ".", 2)[0]
	}
	model := pkg + "." + gv.Version + "." + kind
	if _, ok := builtin(v3)[model]; !ok {
		return ""
	}
	return model
}

// customModel names a model the way apiextensions-apiserver names custom resources: the
// reversed group, the version and the kind ("com.example.v1.Widget").
func customModel(gv schema.GroupVersion, kind string) string {
	parts := strings.Split(gv.Group, ".")
	slices.Reverse(parts)
	return strings.Join(parts, ".") + "." + gv.Version + "." + kind
}

func listKind(r *catalog.Resource) string {
	if r.ListKind != "" {
		return r.ListKind
	}
	return r.Kind + "List"
}

// gvkList is the value of an x-kubernetes-group-version-kind extension on a definition.
type gvkList []schema.GroupVersionKind

func (l gvkList) add(gvk schema.GroupVersionKind) gvkList {
	if slices.Contains(l, gvk) {
		return l
	}
	l = append(l, gvk)
	slices.SortFunc(l, func(a, b schema.GroupVersionKind) int {
		return strings.Compare(a.Group+"/"+a.Version+"/"+a.Kind, b.Group+"/"+b.Version+"/"+b.Kind)
	})
	return l
}

func (l gvkList) extension() []any {
	out := make([]any, len(l))
	for i, gvk := range l {
		out[i] = gvkValue(gvk)
	}
	return out
}

func gvkValue(gvk schema.GroupVersionKind) map[string]any {
	return map[string]any{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

// walk applies f to every schema nested in s (s included), copying rather than mutating.
func walk(s *spec.Schema, f func(*spec.Schema) *spec.Schema) *spec.Schema {
	w := schemamutation.Walker{SchemaCallback: f, RefCallback: schemamutation.RefCallbackNoop}
	return w.WalkSchema(s)
}

func pruneDefault(s *spec.Schema) *spec.Schema {
	if s.Default == nil {
		return s
	}
	c := *s
	c.Default = nil
	return &c
}

// wrapRef moves a reference that has siblings (a description, a default) into allOf, as OpenAPI
// v3 ignores the siblings of $ref.
func wrapRef(s *spec.Schema) *spec.Schema {
	if s.Ref.String() == "" || reflect.DeepEqual(*s, spec.Schema{SchemaProps: spec.SchemaProps{Ref: s.Ref}}) {
		return s
	}
	c := *s
	c.AllOf = []spec.Schema{{SchemaProps: spec.SchemaProps{Ref: s.Ref}}}
	c.Ref = spec.Ref{}
	return &c
}

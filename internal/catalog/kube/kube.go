package kube

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/deprecation"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// Type is one built-in resource as kube-apiserver serves it at one version.
type Type struct {
	Resource schema.GroupVersionResource
	Kind     string
	// StorageVersion is the version objects are stored at.
	StorageVersion schema.GroupVersion
	strategies
}

// internalGroup is the group of the internal version objects convert through: the served
// group's own (events.k8s.io's internal Event is core's Event type).
func (t *Type) internalGroup() string { return t.Resource.Group }

// updateStrategy is the strategy of an update through subresource ("" is the resource).
func (t *Type) updateStrategy(subresource string) rest.RESTUpdateStrategy {
	if subresource == "" {
		return t.main
	}
	return t.sub[subresource]
}

//go:embed discovery/kube-1.37.json
var discoveryJSON []byte

// discoveryGroup is one group of kube-apiserver 1.37's aggregated discovery, in its order.
type discoveryGroup struct {
	Group    string `json:"group"`
	Versions []struct {
		Version   string                                `json:"version"`
		Resources []apidiscoveryv2.APIResourceDiscovery `json:"resources"`
	} `json:"versions"`
}

// Resources returns the built-in resources kube-apiserver 1.37 serves, in its discovery order,
// each driven by kube's own code. provided supplies resources this package does not drive
// (CustomResourceDefinitions); resources neither has a strategy for nor provided are left out.
func Resources(d Deps, provided map[schema.GroupResource]*catalog.Resource) ([]*catalog.Resource, error) {
	var groups []discoveryGroup
	if err := json.Unmarshal(discoveryJSON, &groups); err != nil {
		return nil, fmt.Errorf("kube's discovery data: %w", err)
	}
	rows := table(d)
	tables := newTables()
	objects := newObjectInterfaces()
	var out []*catalog.Resource
	for _, g := range groups {
		for _, v := range g.Versions {
			for i := range v.Resources {
				entry := &v.Resources[i]
				gr := schema.GroupResource{Group: g.Group, Resource: entry.Resource}
				if r, ok := provided[gr]; ok {
					out = append(out, r)
					continue
				}
				if virtual[gr] {
					out = append(out, virtualResource(g.Group, v.Version, entry))
					continue
				}
				row, ok := rows[gr]
				if !ok {
					continue
				}
				row.admission, row.checkWrite, row.objects = d.Admission, d.CheckWrite, objects
				r, err := resource(g.Group, v.Version, entry, row, tables)
				if err != nil {
					return nil, err
				}
				objects.register(r, entry)
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// resource is the catalogue entry of one discovery entry, driven by row's strategies.
func resource(group, version string, entry *apidiscoveryv2.APIResourceDiscovery, row strategies, tables rest.TableConvertor) (*catalog.Resource, error) {
	gv := schema.GroupVersion{Group: group, Version: version}
	storedAs := gv.WithResource(entry.Resource).GroupResource()
	if row.storedAs != nil {
		storedAs = *row.storedAs
	}
	storageVersions := scheme().PrioritizedVersionsForGroup(storedAs.Group)
	if len(storageVersions) == 0 {
		return nil, fmt.Errorf("no versions of %s registered", storedAs.Group)
	}
	t := &Type{
		Resource:       gv.WithResource(entry.Resource),
		Kind:           entry.ResponseKind.Kind,
		StorageVersion: storageVersions[0],
		strategies:     row,
	}
	b := newBehavior(t)
	r := &catalog.Resource{
		GroupVersion:         gv,
		Name:                 entry.Resource,
		Kind:                 t.Kind,
		ListKind:             t.Kind + "List",
		Singular:             entry.SingularResource,
		Namespaced:           entry.Scope == apidiscoveryv2.ScopeNamespace,
		ShortNames:           entry.ShortNames,
		Categories:           entry.Categories,
		StorageGroupResource: storedAs,
		StorageVersion:       t.StorageVersion,
		ResourceVerbs:        entry.Verbs,
		HasStatus:            row.sub["status"] != nil,
		Behavior:             b,
		TypedBehavior:        b,
		Printer:              newPrinter(b, tables),
		ResetFields:          resetFields(row),
		FieldLabel: func(label, value string) (string, string, error) {
			return scheme().ConvertFieldLabel(gv.WithKind(t.Kind), label, value)
		},
		ConvertVersion: func(obj *unstructured.Unstructured, to schema.GroupVersion) (*unstructured.Unstructured, error) {
			return convertVersion(scheme(), t.internalGroup(), obj, to)
		},
	}
	if r.ResourceVerbs == nil {
		r.ResourceVerbs = []string{}
	}
	r.DeprecationWarning = deprecationWarning(gv.WithKind(t.Kind))
	if _, ok := row.main.(rest.RESTGracefulDeleteStrategy); ok {
		r.GracefulDelete = b.gracefulDelete
	}
	r.CreateOnUpdate = row.main.AllowCreateOnUpdate(context.Background())
	r.ReturnDeletedObject = row.returnsDeleted
	r.DeleteWarning = row.deleteWarning
	r.TTL = row.ttl
	// kube-apiserver's DefaultWatchCacheSizes: none for events.
	r.WatchesFromStorage = storedAs == schema.GroupResource{Resource: "events"}
	if gc, ok := row.main.(rest.GarbageCollectionDeleteStrategy); ok {
		// The policy may depend on the version asked for (batch/v1 Jobs orphan).
		var w catalog.Warnings
		ctx := requestContext(context.Background(), t, "", "", "delete", &w)
		r.OrphanByDefault = gc.DefaultGarbageCollectionPolicy(ctx) == rest.OrphanDependents
	}
	for _, s := range entry.Subresources {
		kind := schema.GroupVersionKind{Group: s.ResponseKind.Group, Version: s.ResponseKind.Version, Kind: s.ResponseKind.Kind}
		r.Subresources = append(r.Subresources, catalog.Subresource{Name: s.Subresource, Kind: kind, Verbs: s.Verbs})
		if s.Subresource == "scale" {
			r.Scale = &catalog.ScaleSubresource{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ".spec.selector"}
		}
	}
	if storedAs != r.GroupVersionResource().GroupResource() || t.StorageVersion != gv {
		r.Conversion = &catalog.Conversion{
			ToStorage: func(obj *unstructured.Unstructured) error {
				out, err := convertVersion(scheme(), t.internalGroup(), obj, t.StorageVersion)
				if err == nil {
					obj.Object = out.Object
				}
				return err
			},
			FromStorage: func(obj *unstructured.Unstructured) error {
				if obj.GetAPIVersion() == gv.String() {
					return nil
				}
				out, err := convertVersion(scheme(), storedAs.Group, obj, gv)
				if err == nil {
					obj.Object = out.Object
				}
				return err
			},
		}
	}
	return r, nil
}

// kubeMinor is the Kubernetes release whose API lapis serves, for API lifecycle checks.
const kubeMajor, kubeMinor = 1, 37

// deprecationWarning is the warning kube-apiserver adds to every request for a deprecated kind
// at a version ("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice").
func deprecationWarning(gvk schema.GroupVersionKind) string {
	obj, err := scheme().New(gvk)
	if err != nil {
		return ""
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if !deprecation.IsDeprecated(obj, kubeMajor, kubeMinor) {
		return ""
	}
	return deprecation.WarningMessage(obj)
}

// virtualResource is the catalogue entry of a resource kube serves without storing it.
func virtualResource(group, version string, entry *apidiscoveryv2.APIResourceDiscovery) *catalog.Resource {
	gv := schema.GroupVersion{Group: group, Version: version}
	r := &catalog.Resource{
		GroupVersion:  gv,
		Name:          entry.Resource,
		Kind:          entry.ResponseKind.Kind,
		ListKind:      entry.ResponseKind.Kind + "List",
		Singular:      entry.SingularResource,
		Namespaced:    entry.Scope == apidiscoveryv2.ScopeNamespace,
		ShortNames:    entry.ShortNames,
		Categories:    entry.Categories,
		ResourceVerbs: entry.Verbs,
		Subresources:  []catalog.Subresource{},
		Virtual:       true,
	}
	r.DeprecationWarning = deprecationWarning(gv.WithKind(r.Kind))
	return r
}

// resetFields are the fields kube's strategies say each endpoint never sets.
func resetFields(row strategies) map[string]map[fieldpath.APIVersion]*fieldpath.Set {
	out := map[string]map[fieldpath.APIVersion]*fieldpath.Set{}
	add := func(sub string, s any) {
		if rs, ok := s.(rest.ResetFieldsStrategy); ok {
			out[sub] = rs.GetResetFields()
		}
	}
	add("", row.main)
	for sub, s := range row.sub {
		add(sub, s)
	}
	return out
}

// warnings collects what strategies report, as kube's warning recorder does.
// requestContext carries what kube's strategies read: the namespace, a RequestInfo
// (declarative validation needs it) and a warning recorder.
func requestContext(ctx context.Context, t *Type, namespace, subresource, verb string, w *catalog.Warnings) context.Context {
	ctx = genericapirequest.WithNamespace(ctx, namespace)
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: verb, APIGroup: t.Resource.Group, APIVersion: t.Resource.Version,
		Namespace: namespace, Resource: t.Resource.Resource, Subresource: subresource,
	})
	return warning.WithWarningRecorder(ctx, w)
}

// objectInterfaces are what admission plugins create, convert and type built-in objects with:
// kube's scheme, and the registry of equivalent resources kube-apiserver's installer fills, by
// which a webhook registered for one version of a resource (autoscaling/v2
// horizontalpodautoscalers) is called for writes through another (autoscaling/v1), and core
// and events.k8s.io Events are one resource.
type objectInterfaces struct {
	admission.RuntimeObjectInterfaces
	registry   runtime.EquivalentResourceRegistry
	identities map[schema.GroupResource]string
}

func newObjectInterfaces() *objectInterfaces {
	o := &objectInterfaces{identities: map[schema.GroupResource]string{}}
	// As kube-apiserver's: resources stored under one prefix are one resource.
	o.registry = runtime.NewEquivalentResourceRegistryWithIdentity(func(gr schema.GroupResource) string { return o.identities[gr] })
	s := scheme()
	o.RuntimeObjectInterfaces = admission.RuntimeObjectInterfaces{ObjectCreater: s, ObjectTyper: s, ObjectDefaulter: s,
		ObjectConvertor: s, EquivalentResourceMapper: o.registry}
	return o
}

// register records r's kinds, as kube's installer registers each route's.
func (o *objectInterfaces) register(r *catalog.Resource, entry *apidiscoveryv2.APIResourceDiscovery) {
	gvr := r.GroupVersionResource()
	o.identities[gvr.GroupResource()] = r.StorageGroupResource.String()
	o.registry.RegisterKindFor(gvr, "", r.GroupVersionKind())
	for _, sub := range entry.Subresources {
		if sub.ResponseKind == nil {
			continue
		}
		gvk := schema.GroupVersionKind{Group: sub.ResponseKind.Group, Version: sub.ResponseKind.Version, Kind: sub.ResponseKind.Kind}
		if gvk.Group == "" && gvk.Version == "" {
			gvk = r.GroupVersion.WithKind(gvk.Kind)
		}
		o.registry.RegisterKindFor(gvr, sub.Subresource, gvk)
	}
}

package openapi

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	openapiv2 "k8s.io/apiextensions-apiserver/pkg/controller/openapi/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/lapis-dev/lapis/internal/catalog"
)

var (
	objectMetaDescription = metav1.PartialObjectMetadata{}.SwaggerDoc()["metadata"]
	listMetaDescription   = metav1.PartialObjectMetadataList{}.SwaggerDoc()["metadata"]
)

// customKind builds the definition of a resource's kind from its CRD version's schema, as
// apiextensions-apiserver does: the structural schema plus apiVersion, kind and metadata. It also
// serves built-in resources openapi-gen has no definition for: they get the schema of a CRD
// without one (any object).
func customKind(r *catalog.Resource, f flavour) definition {
	d := definition{schema: *f.finish(kindSchema(r, f)), deps: []string{objectMetaModel, typeMetaModel}}
	if r.CRD != nil {
		if fields := selectableFields(r.CRDVersion); fields != nil {
			d.schema.AddExtension("x-kubernetes-selectable-fields", fields)
		}
	}
	return d
}

// customList builds the definition of a resource's list kind, whose items are kindModel.
func customList(r *catalog.Resource, kindModel string, f flavour) definition {
	s := (&spec.Schema{}).
		Typed("object", "").
		WithDescription(fmt.Sprintf("%s is a list of %s", listKind(r), r.Kind)).
		WithRequired("items").
		SetProperty("items", *spec.ArrayProperty(f.refSchema(kindModel)).WithDescription(
			fmt.Sprintf("List of %s. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", r.Name))).
		SetProperty("metadata", *f.refSchema(listMetaModel).WithDescription(listMetaDescription))
	addTypeMeta(s, f)
	return definition{schema: *f.finish(s), deps: []string{listMetaModel, typeMetaModel, kindModel}}
}

func kindSchema(r *catalog.Resource, f flavour) *spec.Schema {
	ss := structural(r.CRDVersion)
	preserveUnknown := r.CRD != nil && r.CRD.Spec.PreserveUnknownFields
	if ss == nil || (f.v2 && (ss.XPreserveUnknownFields || preserveUnknown)) {
		// Without properties: kubectl's v2 validation would otherwise reject every field but
		// apiVersion, kind and metadata.
		return &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}}}
	}
	if f.v2 {
		ss = openapiv2.ToStructuralOpenAPIV2(ss)
	}
	s := ss.ToKubeOpenAPI()
	s.SetProperty("metadata", *f.refSchema(objectMetaModel).WithDescription(objectMetaDescription))
	addTypeMeta(s, f)
	addEmbeddedProperties(s, f)
	return s
}

// structural returns the version's schema as a structural schema with value validations
// unfolded, or nil if there is no usable one (none, invalid types, not structural).
func structural(v *apiextensionsv1.CustomResourceDefinitionVersion) *structuralschema.Structural {
	if v == nil || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return nil
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
		return nil
	}
	ss, err := structuralschema.NewStructural(internal)
	if err != nil || !validTypes(ss) || len(structuralschema.ValidateStructural(nil, ss)) > 0 {
		return nil
	}
	return ss.Unfold()
}

func validTypes(s *structuralschema.Structural) bool {
	if s == nil {
		return true
	}
	switch s.Type {
	case "", "array", "boolean", "integer", "number", "object", "string":
	default:
		return false
	}
	for _, p := range s.Properties {
		if !validTypes(&p) {
			return false
		}
	}
	if s.AdditionalProperties != nil && !validTypes(s.AdditionalProperties.Structural) {
		return false
	}
	return validTypes(s.Items)
}

// addTypeMeta sets the apiVersion and kind properties from TypeMeta's definition.
func addTypeMeta(s *spec.Schema, f flavour) {
	tm := builtin(f)[typeMetaModel].schema
	s.SetProperty("apiVersion", tm.Properties["apiVersion"])
	s.SetProperty("kind", tm.Properties["kind"])
}

// addEmbeddedProperties gives every x-kubernetes-embedded-resource object apiVersion, kind and
// metadata, except (in v2) below x-kubernetes-preserve-unknown-fields, where kubectl would then
// refuse the unknown fields.
func addEmbeddedProperties(s *spec.Schema, f flavour) {
	if s == nil {
		return
	}
	for k, v := range s.Properties {
		addEmbeddedProperties(&v, f)
		s.Properties[k] = v
	}
	if s.Items != nil {
		addEmbeddedProperties(s.Items.Schema, f)
	}
	if s.AdditionalProperties != nil {
		addEmbeddedProperties(s.AdditionalProperties.Schema, f)
	}
	if preserve, _ := s.Extensions.GetBool("x-kubernetes-preserve-unknown-fields"); preserve && f.v2 {
		return
	}
	if embedded, _ := s.Extensions.GetBool("x-kubernetes-embedded-resource"); !embedded {
		return
	}
	tm := builtin(f)[typeMetaModel].schema
	apiVersion, kind := tm.Properties["apiVersion"], tm.Properties["kind"]
	s.SetProperty("apiVersion", *apiVersion.WithDescription("apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"))
	s.SetProperty("kind", *kind.WithDescription("kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"))
	s.SetProperty("metadata", *f.refSchema(objectMetaModel).WithDescription(objectMetaDescription))
	for _, name := range []string{"kind", "apiVersion"} {
		if !slices.Contains(s.Required, name) {
			s.Required = append(s.Required, name)
		}
	}
}

func selectableFields(v *apiextensionsv1.CustomResourceDefinitionVersion) []any {
	if v == nil || len(v.SelectableFields) == 0 {
		return nil
	}
	out := make([]any, len(v.SelectableFields))
	for i, sf := range v.SelectableFields {
		out[i] = map[string]any{"fieldPath": strings.TrimPrefix(sf.JSONPath, ".")}
	}
	return out
}

package crd

import (
	"context"
	"fmt"
	"math"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"k8s.io/client-go/util/jsonpath"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// customBehavior is the catalog.Behavior of one served version of a custom resource.
type customBehavior struct {
	structural *structuralschema.Structural // nil: no schema, anything goes
	defaults   bool                         // the schema declares a default somewhere
	embedded   bool                         // the schema has x-kubernetes-embedded-resource parts
	rules      *cel.Validator               // the schema's x-kubernetes-validations (nil: none)
	validator  apiservervalidation.SchemaValidator
	// statusValidator checks a status subresource write: the schema's status property alone,
	// as kube validates it (nil: the schema says nothing of status).
	statusValidator apiservervalidation.SchemaValidator
	hasStatus       bool
	scale           *apiextensionsv1.CustomResourceSubresourceScale // nil: no scale subresource
	selectable      []selectableField
}

type selectableField struct {
	name string // ".spec.color" → "spec.color"
	path *jsonpath.JSONPath
}

func newCustomBehavior(crd *apiextensionsv1.CustomResourceDefinition, v *apiextensionsv1.CustomResourceDefinitionVersion) (*customBehavior, error) {
	b := &customBehavior{hasStatus: v.Subresources != nil && v.Subresources.Status != nil}
	if v.Subresources != nil {
		b.scale = v.Subresources.Scale
	}
	schema := v.Schema
	if schema == nil || schema.OpenAPIV3Schema == nil {
		return b, nil
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(schema.OpenAPIV3Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("converting schema: %w", err)
	}
	s, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("schema is not structural: %w", err)
	}
	b.structural = s
	b.defaults = hasDefaults(s)
	b.embedded = hasEmbeddedResources(s)
	b.rules = cel.NewValidator(s, true, celconfig.PerCallLimit)
	if b.validator, _, err = apiservervalidation.NewSchemaValidator(internal); err != nil {
		return nil, fmt.Errorf("building validator: %w", err)
	}
	if status, ok := internal.Properties["status"]; ok && b.hasStatus {
		if b.statusValidator, _, err = apiservervalidation.NewSchemaValidator(&status); err != nil {
			return nil, fmt.Errorf("building status validator: %w", err)
		}
	}
	for _, sf := range v.SelectableFields {
		jp := jsonpath.New(sf.JSONPath).AllowMissingKeys(true)
		if err := jp.Parse("{" + sf.JSONPath + "}"); err != nil {
			continue
		}
		b.selectable = append(b.selectable, selectableField{name: sf.JSONPath[1:], path: jp})
	}
	return b, nil
}

// Normalize prunes fields the schema does not declare and reports them as kube-apiserver does.
func (b *customBehavior) Normalize(obj *unstructured.Unstructured) ([]string, error) {
	if b.structural == nil {
		return nil, nil
	}
	// The root's metadata decodes as kube's does, with json's own error for a value of the wrong
	// type; CoerceWithOptions would report it as a field error.
	if _, _, err := schemaobjectmeta.GetObjectMeta(obj.Object, false); err != nil {
		return nil, err
	}
	var unknown []string
	if errs, dropped := schemaobjectmeta.CoerceWithOptions(nil, obj.Object, b.structural, true, schemaobjectmeta.CoerceOptions{
		ReturnUnknownFieldPaths: true,
	}); errs != nil {
		return nil, fmt.Errorf("%s", errs.Error())
	} else {
		unknown = append(unknown, dropped...)
	}
	paths := pruning.PruneWithOptions(obj.Object, b.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	out := make([]string, 0, len(unknown)+len(paths))
	for _, p := range append(unknown, paths...) {
		out = append(out, fmt.Sprintf("unknown field %q", p))
	}
	return out, nil
}

// DropNulls drops a null where the schema allows none and no default fills it, as kube's
// decoding of a custom resource does: a body's null there is no value, not a wrong one.
func (b *customBehavior) DropNulls(obj *unstructured.Unstructured) {
	if b.structural != nil {
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj.Object, b.structural)
	}
}

// PrepareForCreate drops status when the status subresource owns it.
func (b *customBehavior) PrepareForCreate(obj *unstructured.Unstructured) {
	if b.hasStatus {
		delete(obj.Object, "status")
	}
}

// PrepareForUpdate keeps the stored status when the status subresource owns it.
func (b *customBehavior) PrepareForUpdate(obj, old *unstructured.Unstructured) {
	if !b.hasStatus {
		return
	}
	delete(obj.Object, "status")
	if st, ok := old.Object["status"]; ok {
		obj.Object["status"] = st
	}
}

// Default applies the schema's defaults.
func (b *customBehavior) Default(obj *unstructured.Unstructured) {
	if b.defaults {
		structuraldefaulting.Default(obj.Object, b.structural)
	}
}

var _ catalog.Hooks = (*customBehavior)(nil)

// DefaultsOnRead: objects are defaulted when read, so a stored object may change on reading —
// only when the schema has defaults; otherwise reads serve the stored bytes as they are.
func (b *customBehavior) DefaultsOnRead() bool { return b.defaults }

// hasEmbeddedResources reports whether a schema embeds resources (whose metadata it validates).
func hasEmbeddedResources(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if s.XEmbeddedResource || hasEmbeddedResources(s.Items) {
		return true
	}
	for _, p := range s.Properties {
		if hasEmbeddedResources(&p) {
			return true
		}
	}
	return s.AdditionalProperties != nil && hasEmbeddedResources(s.AdditionalProperties.Structural)
}

// hasDefaults reports whether a schema declares a default anywhere.
func hasDefaults(s *structuralschema.Structural) bool {
	if s == nil {
		return false
	}
	if s.Default.Object != nil || hasDefaults(s.Items) {
		return true
	}
	for _, p := range s.Properties {
		if hasDefaults(&p) {
			return true
		}
	}
	return s.AdditionalProperties != nil && hasDefaults(s.AdditionalProperties.Structural)
}

// Validate checks the object against the schema, list-type rules and embedded metadata, as
// kube's custom resource strategy does: on update, errors in values the update leaves unchanged
// (where the old object correlates) are ratcheted — schema, CEL rules and list types alike.
func (b *customBehavior) Validate(obj, old *unstructured.Unstructured) field.ErrorList {
	return b.validate(obj, old, "")
}

// ValidateStatus is Validate for a write through the status subresource: kube checks the
// status against the schema's status property alone, and of the scale's values only those in
// the status.
func (b *customBehavior) ValidateStatus(obj, old *unstructured.Unstructured) field.ErrorList {
	return b.validate(obj, old, "status")
}

// validate is Validate of a write through subresource ("" or "status").
func (b *customBehavior) validate(obj, old *unstructured.Unstructured, subresource string) field.ErrorList {
	status := subresource == "status"
	scaleErrs := func() field.ErrorList {
		if status {
			return validateScaleStatus(obj, b.scale)
		}
		return append(validateScaleSpec(obj, b.scale), validateScaleStatus(obj, b.scale)...)
	}
	if b.structural == nil {
		return scaleErrs()
	}
	var errs field.ErrorList
	var celOptions []cel.Option
	var oldObject any
	if old != nil {
		oldObject = old.Object
	}
	switch {
	case status && old != nil:
		correlated := common.NewCorrelatedObject(obj.Object, old.Object, &model.Structural{Structural: b.structural})
		celOptions = append(celOptions, cel.WithRatcheting(correlated))
		if value, ok := obj.Object["status"]; ok && b.statusValidator != nil {
			errs = apiservervalidation.ValidateCustomResourceUpdate(field.NewPath("status"), value, old.Object["status"], b.statusValidator,
				apiservervalidation.WithRatcheting(correlated.Key("status")))
		}
	case old == nil:
		errs = apiservervalidation.ValidateCustomResource(nil, obj.UnstructuredContent(), b.validator)
	default:
		correlated := common.NewCorrelatedObject(obj.Object, old.Object, &model.Structural{Structural: b.structural})
		celOptions = append(celOptions, cel.WithRatcheting(correlated))
		errs = apiservervalidation.ValidateCustomResourceUpdate(nil, obj.UnstructuredContent(), old.UnstructuredContent(), b.validator,
			apiservervalidation.WithRatcheting(correlated))
	}
	errs = append(errs, scaleErrs()...)
	if b.embedded {
		// The root's metadata is the pipeline's to validate; embedded resources' is the schema's.
		errs = append(errs, schemaobjectmeta.Validate(context.TODO(), nil, obj.Object, b.structural, false)...)
	}
	if old == nil || len(listtype.ValidateListSetsAndMaps(nil, b.structural, old.Object)) == 0 {
		errs = append(errs, listtype.ValidateListSetsAndMaps(nil, b.structural, obj.Object)...)
	}
	if b.rules != nil {
		if blocking := blockingError(errs); blocking != nil {
			return append(errs, blocking)
		}
		ruleErrs, _ := b.rules.Validate(context.TODO(), nil, b.structural, obj.Object, oldObject, celconfig.RuntimeCELCostBudget, celOptions...)
		errs = append(errs, ruleErrs...)
	}
	return errs
}

// validateScaleSpec and validateScaleStatus are kube's checks of the values a scale
// subresource reads (its custom resource validator's ValidateScaleSpec and ValidateScaleStatus,
// which it does not export): the replicas are integers within 0..MaxInt32, the label selector a
// string.
func validateScaleSpec(obj *unstructured.Unstructured, scale *apiextensionsv1.CustomResourceSubresourceScale) field.ErrorList {
	if scale == nil {
		return nil
	}
	return validateReplicas(obj, scale.SpecReplicasPath)
}

func validateScaleStatus(obj *unstructured.Unstructured, scale *apiextensionsv1.CustomResourceSubresourceScale) field.ErrorList {
	if scale == nil {
		return nil
	}
	errs := validateReplicas(obj, scale.StatusReplicasPath)
	if scale.LabelSelectorPath != nil {
		path := strings.TrimPrefix(*scale.LabelSelectorPath, ".")
		if selector, _, err := unstructured.NestedString(obj.Object, strings.Split(path, ".")...); err != nil {
			errs = append(errs, field.Invalid(field.NewPath(*scale.LabelSelectorPath), selector, err.Error()))
		}
	}
	return errs
}

func validateReplicas(obj *unstructured.Unstructured, jsonPath string) field.ErrorList {
	path := strings.TrimPrefix(jsonPath, ".")
	replicas, _, err := unstructured.NestedInt64(obj.Object, strings.Split(path, ".")...)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(field.NewPath(jsonPath), replicas, err.Error())}
	case replicas < 0:
		return field.ErrorList{field.Invalid(field.NewPath(jsonPath), replicas, "should be a non-negative integer")}
	case replicas > math.MaxInt32:
		return field.ErrorList{field.Invalid(field.NewPath(jsonPath), replicas, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32))}
	}
	return nil
}

// blockingError is kube's answer when schema errors keep CEL rules from being evaluated.
func blockingError(errs field.ErrorList) *field.Error {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return nil
}

// SelectableFields returns the CRD's selectableFields values.
func (b *customBehavior) SelectableFields(obj *unstructured.Unstructured) fields.Set {
	if len(b.selectable) == 0 {
		return nil
	}
	set := fields.Set{}
	for _, sf := range b.selectable {
		set[sf.name] = ""
		results, err := sf.path.FindResults(obj.Object)
		if err != nil || len(results) == 0 || len(results[0]) == 0 {
			continue
		}
		set[sf.name] = fmt.Sprint(results[0][0].Interface())
	}
	return set
}

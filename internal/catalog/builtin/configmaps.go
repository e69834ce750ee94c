package builtin

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// maxDataSize bounds a configmap's or secret's data, as kube's MaxSecretSize does.
const maxDataSize = 1 * 1024 * 1024

const immutableMsg = "field is immutable when `immutable` is set"

func configMaps() *catalog.Resource {
	return &catalog.Resource{
		GroupVersion:         coreV1,
		Name:                 "configmaps",
		Kind:                 "ConfigMap",
		ListKind:             "ConfigMapList",
		Singular:             "configmap",
		Namespaced:           true,
		ShortNames:           []string{"cm"},
		StorageGroupResource: schema.GroupResource{Resource: "configmaps"},
		NameValidation:       apivalidation.NameIsDNSSubdomain,
		Printer:              configMapPrinter,
		Behavior: catalog.Typed[corev1.ConfigMap, *corev1.ConfigMap]{
			Validation: validateConfigMap,
		},
	}
}

func validateConfigMap(cm, old *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	if old != nil && old.Immutable != nil && *old.Immutable {
		if cm.Immutable == nil || !*cm.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
		}
		if !reflect.DeepEqual(cm.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
		}
		if !reflect.DeepEqual(cm.BinaryData, old.BinaryData) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), immutableMsg))
		}
	}

	size := 0
	for _, key := range sortedKeys(cm.Data) {
		p := field.NewPath("data").Key(key)
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(p, key, msg))
		}
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(p, key, "duplicate of key present in binaryData"))
		}
		size += len(cm.Data[key])
	}
	for _, key := range sortedKeys(cm.BinaryData) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(key), key, msg))
		}
		size += len(cm.BinaryData[key])
	}
	if size > maxDataSize {
		// kube reports the whole object with an empty path.
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxDataSize))
	}
	return errs
}

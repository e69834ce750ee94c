package builtin

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lapis-dev/lapis/internal/catalog"
)

func namespaces() *catalog.Resource {
	return &catalog.Resource{
		GroupVersion:         coreV1,
		Name:                 "namespaces",
		Kind:                 "Namespace",
		ListKind:             "NamespaceList",
		Singular:             "namespace",
		ShortNames:           []string{"ns"},
		StorageGroupResource: schema.GroupResource{Resource: "namespaces"},
		HasStatus:            true,
		ReturnDeletedObject:  true,
		NameValidation:       apivalidation.NameIsDNSLabel,
		Printer:              namespacePrinter,
		Behavior: catalog.Typed[corev1.Namespace, *corev1.Namespace]{
			OnCreate: func(ns *corev1.Namespace) {
				ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
				// The kubernetes finalizer is required on create only: it may be removed later,
				// which is why this is not a default.
				if !containsFinalizer(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
					ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
				}
				// kube sets the name label again in Canonicalize, for generated names.
				setNamespaceNameLabel(ns)
			},
			OnUpdate: func(ns, old *corev1.Namespace) {
				// Finalizers change through /finalize and status through /status only.
				ns.Spec.Finalizers = old.Spec.Finalizers
				ns.Status = old.Status
				setNamespaceNameLabel(ns)
			},
			Defaults: func(ns *corev1.Namespace) {
				setNamespaceNameLabel(ns)
				if ns.Status.Phase == "" {
					ns.Status.Phase = corev1.NamespaceActive
				}
			},
			Validation: func(ns, _ *corev1.Namespace) field.ErrorList {
				var errs field.ErrorList
				for _, f := range ns.Spec.Finalizers {
					errs = append(errs, validateFinalizerName(string(f), field.NewPath("spec", "finalizers"))...)
				}
				return errs
			},
			Fields: func(ns *corev1.Namespace) fields.Set {
				return fields.Set{
					"status.phase": string(ns.Status.Phase),
					"name":         ns.Name, // kube keeps this bare "name" for backward compatibility
				}
			},
		},
	}
}

func containsFinalizer(fs []corev1.FinalizerName, f corev1.FinalizerName) bool {
	for _, x := range fs {
		if x == f {
			return true
		}
	}
	return false
}

// setNamespaceNameLabel applies kube's kubernetes.io/metadata.name label once the name is known.
func setNamespaceNameLabel(ns *corev1.Namespace) {
	if ns.Name == "" {
		return
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

// standardFinalizers are the unqualified finalizer names kube accepts.
var standardFinalizers = map[string]bool{
	string(corev1.FinalizerKubernetes): true,
	metav1.FinalizerOrphanDependents:   true,
	metav1.FinalizerDeleteDependents:   true,
}

func validateFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateFinalizerName(name, fldPath)
	if !strings.Contains(name, "/") && !standardFinalizers[name] {
		errs = append(errs, field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified"))
	}
	return errs
}

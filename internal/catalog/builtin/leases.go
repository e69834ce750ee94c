package builtin

import (
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericfeatures "k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/lapis-dev/lapis/internal/catalog"
)

func leases() *catalog.Resource {
	return &catalog.Resource{
		GroupVersion:         coordinationv1.SchemeGroupVersion,
		Name:                 "leases",
		Kind:                 "Lease",
		ListKind:             "LeaseList",
		Singular:             "lease",
		Namespaced:           true,
		StorageGroupResource: schema.GroupResource{Group: coordinationv1.GroupName, Resource: "leases"},
		NameValidation:       apivalidation.NameIsDNSSubdomain,
		Printer:              leasePrinter,
		Behavior: catalog.Typed[coordinationv1.Lease, *coordinationv1.Lease]{
			OnCreate: func(l *coordinationv1.Lease) { dropDisabledLeaseFields(l, nil) },
			OnUpdate: dropDisabledLeaseFields,
			Validation: func(l, _ *coordinationv1.Lease) field.ErrorList {
				return validateLeaseSpec(&l.Spec, field.NewPath("spec"))
			},
		},
	}
}

// dropDisabledLeaseFields clears the coordinated leader election fields while that feature gate
// (beta, off by default) is off, unless the stored lease already uses them.
func dropDisabledLeaseFields(l, old *coordinationv1.Lease) {
	if utilfeature.DefaultFeatureGate.Enabled(genericfeatures.CoordinatedLeaderElection) {
		return
	}
	if old == nil || old.Spec.Strategy == nil {
		l.Spec.Strategy = nil
	}
	if old == nil || old.Spec.PreferredHolder == nil {
		l.Spec.PreferredHolder = nil
	}
}

func validateLeaseSpec(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("leaseDurationSeconds"), spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if spec.LeaseTransitions != nil && *spec.LeaseTransitions < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("leaseTransitions"), spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil {
		// kube appends "strategy" to the already-qualified path, reporting spec.strategy.strategy;
		// kept so messages match.
		errs = append(errs, validateLeaseStrategy(*spec.Strategy, fldPath.Child("strategy").Child("strategy"))...)
	}
	if spec.PreferredHolder != nil && *spec.PreferredHolder != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		errs = append(errs, field.Forbidden(fldPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}

var validLeaseStrategies = []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}

func validateLeaseStrategy(s coordinationv1.CoordinatedLeaseStrategy, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !strings.Contains(string(s), "/") {
		// Unqualified names are reserved for Kubernetes-defined strategies.
		if s != coordinationv1.OldestEmulationVersion {
			errs = append(errs, field.NotSupported(p, s, validLeaseStrategies))
		}
		return errs
	}
	for _, msg := range validation.IsQualifiedName(string(s)) {
		errs = append(errs, field.Invalid(p, s, msg))
	}
	return errs
}

package builtin

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/fieldmanager/conventions"
)

func customResourceDefinitions() *catalog.Resource {
	return &catalog.Resource{
		GroupVersion:                   apiextensionsv1.SchemeGroupVersion,
		Name:                           "customresourcedefinitions",
		Kind:                           "CustomResourceDefinition",
		ListKind:                       "CustomResourceDefinitionList",
		Singular:                       "customresourcedefinition",
		ShortNames:                     []string{"crd", "crds"},
		Categories:                     []string{"api-extensions"},
		StorageGroupResource:           schema.GroupResource{Group: apiextensionsv1.GroupName, Resource: "customresourcedefinitions"},
		HasStatus:                      true,
		SpecTracksGeneration:           true,
		RequireResourceVersionOnUpdate: true,
		// The name must also be <plural>.<group>; validateCRD reports that.
		Printer: crdPrinter,
		Behavior: catalog.Strategy(catalog.Typed[apiextensionsv1.CustomResourceDefinition, *apiextensionsv1.CustomResourceDefinition]{
			OnCreate: func(crd *apiextensionsv1.CustomResourceDefinition) {
				crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
				crd.Generation = 1
				addStorageVersion(crd)
			},
			OnUpdate: func(crd, old *apiextensionsv1.CustomResourceDefinition) {
				// Status changes through /status only. The generation bump on spec changes is
				// the pipeline's, as SpecTracksGeneration is set.
				crd.Status = old.Status
				addStorageVersion(crd)
			},
			Defaults:   apiextensionsv1.SetObjectDefaults_CustomResourceDefinition,
			Validation: validateCRD,
		}, schema.GroupKind{Group: apiextensionsv1.GroupName, Kind: "CustomResourceDefinition"}, false, apivalidation.NameIsDNSSubdomain),
		BeforeDeleting: markCRDDeleting,
	}
}

// markCRDDeleting is what kube's CRD REST Delete writes on the first delete
// (apiextensions-apiserver pkg/registry/customresourcedefinition/etcd.go, v0.37.2): its cleanup
// finalizer, which holds the CRD until its custom resources are gone, and the Terminating
// condition.
func markCRDDeleting(obj *unstructured.Unstructured) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
		return err
	}
	if !apihelpers.CRDHasFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer) {
		crd.Finalizers = append(crd.Finalizers, apiextensionsv1.CustomResourceCleanupFinalizer)
	}
	apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: "InstanceDeletionPending",
		Message: "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
	})
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
	if err != nil {
		return err
	}
	obj.Object = content
	return nil
}

// addStorageVersion records the current storage version in status.storedVersions.
func addStorageVersion(crd *apiextensionsv1.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			if !slices.Contains(crd.Status.StoredVersions, v.Name) {
				crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
			}
			return
		}
	}
}

// crdScheme converts CRDs to the internal version the upstream validation is written against.
var crdScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// crdNameMsg and apiApprovalField are the metadata rules upstream CRD validation adds to the
// generic ones: the name, and the approval a CRD in a protected group (*.k8s.io,
// *.kubernetes.io) must carry.
const crdNameMsg = `must be spec.names.plural+"."+spec.group`

var apiApprovalField = field.NewPath("metadata", "annotations").Key(apiextensionsv1.KubeAPIApprovedAnnotation).String()

func validateCRD(obj, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	crd, err := toInternalCRD(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	ctx := context.Background()
	var errs field.ErrorList
	if old == nil {
		errs = crdvalidation.ValidateCustomResourceDefinition(ctx, crd)
	} else {
		oldCRD, err := toInternalCRD(old)
		if err != nil {
			return field.ErrorList{field.InternalError(nil, err)}
		}
		errs = crdvalidation.ValidateCustomResourceDefinitionUpdate(ctx, crd, oldCRD)
	}
	// Upstream validation includes object metadata, which the pipeline validates already; its
	// own rules on metadata are the name's and the approval of protected groups.
	var out field.ErrorList
	for _, e := range errs {
		if strings.HasPrefix(e.Field, "metadata") && e.Detail != crdNameMsg && e.Field != apiApprovalField {
			continue
		}
		out = append(out, e)
	}
	// lapis's own annotation: server-side apply's list conventions, one accepted value.
	return append(out, conventions.Validate(obj.Annotations, field.NewPath("metadata", "annotations"))...)
}

func toInternalCRD(in *apiextensionsv1.CustomResourceDefinition) (*apiextensions.CustomResourceDefinition, error) {
	out := &apiextensions.CustomResourceDefinition{}
	if err := crdScheme.Convert(in.DeepCopy(), out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

package builtin

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
)

func serviceAccounts() *catalog.Resource {
	return &catalog.Resource{
		GroupVersion:         coreV1,
		Name:                 "serviceaccounts",
		Kind:                 "ServiceAccount",
		ListKind:             "ServiceAccountList",
		Singular:             "serviceaccount",
		Namespaced:           true,
		ShortNames:           []string{"sa"},
		StorageGroupResource: schema.GroupResource{Resource: "serviceaccounts"},
		NameValidation:       apivalidation.NameIsDNSSubdomain,
		Printer:              serviceAccountPrinter,
		Behavior: catalog.Typed[corev1.ServiceAccount, *corev1.ServiceAccount]{
			OnCreate: cleanSecretReferences,
			OnUpdate: func(sa, _ *corev1.ServiceAccount) { cleanSecretReferences(sa) },
		},
	}
}

// cleanSecretReferences keeps only the name of each referenced secret, as kube's strategy does:
// the secrets always live in the account's namespace.
func cleanSecretReferences(sa *corev1.ServiceAccount) {
	for i, s := range sa.Secrets {
		sa.Secrets[i] = corev1.ObjectReference{Name: s.Name}
	}
}

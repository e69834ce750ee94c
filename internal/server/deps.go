package server

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/lapis-dev/lapis/internal/catalog/kube"
	"github.com/lapis-dev/lapis/internal/objects"
)

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// kubeDeps gives kube's strategies what they consult beyond the object, read through the
// objects service (bound late: the service needs the catalogue these deps go into).
func kubeDeps(svc func() *objects.Service, chain func() admission.Interface) kube.Deps {
	return kube.Deps{
		Admission: chain,
		Namespace: func(ctx context.Context, name string) (*corev1.Namespace, error) {
			r, _ := svc().Catalog().Lookup(namespacesGVR)
			u, err := svc().Get(ctx, r, "", name)
			if err != nil {
				return nil, err
			}
			ns := &corev1.Namespace{}
			return ns, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ns)
		},
		Resolve: func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
			for _, r := range svc().Catalog().All() {
				if r.GroupVersionKind() == gvk {
					return r.GroupVersionResource(), nil
				}
			}
			return schema.GroupVersionResource{}, &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
		},
	}
}

package quota

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/metadata/metadatainformer"
)

// TestInformerFactory: the resources kube's evaluators and update filter read whole come from
// the shared typed informers (the update filter type-asserts them: a metadata-only Pod would
// panic it), every other one is metadata only, without managedFields.
func TestInformerFactory(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "ns", ManagedFields: managed}
	}
	typedObjects := []runtime.Object{
		&corev1.Pod{ObjectMeta: meta("p")},
		&corev1.Service{ObjectMeta: meta("s")},
		&corev1.PersistentVolumeClaim{ObjectMeta: meta("c")},
	}
	metaScheme := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(metaScheme); err != nil {
		t.Fatal(err)
	}
	partial := func(gvk schema.GroupVersionKind, name string) runtime.Object {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}, ObjectMeta: meta(name)}
	}
	metadataObjects := []runtime.Object{
		partial(corev1.SchemeGroupVersion.WithKind("ConfigMap"), "cm"),
		partial(corev1.SchemeGroupVersion.WithKind("Secret"), "sec"),
		partial(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "d"),
		partial(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, "w"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	shared := informers.NewSharedInformerFactory(fake.NewSimpleClientset(typedObjects...), 0)
	f := &informerFactory{
		typed: shared,
		metadata: metadatainformer.NewSharedInformerFactoryWithOptions(metadatafake.NewSimpleMetadataClient(metaScheme, metadataObjects...), 0,
			metadatainformer.WithTransform(trimManagedFields)),
	}
	tests := []struct {
		gvr  schema.GroupVersionResource
		want string // the Go type of what its lister lists
	}{
		{corev1.SchemeGroupVersion.WithResource("pods"), "*v1.Pod"},
		{corev1.SchemeGroupVersion.WithResource("services"), "*v1.Service"},
		{corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), "*v1.PersistentVolumeClaim"},
		{corev1.SchemeGroupVersion.WithResource("configmaps"), "*v1.PartialObjectMetadata"},
		{corev1.SchemeGroupVersion.WithResource("secrets"), "*v1.PartialObjectMetadata"},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "*v1.PartialObjectMetadata"},
		{schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, "*v1.PartialObjectMetadata"},
	}
	listers := map[schema.GroupVersionResource]informers.GenericInformer{}
	for _, tc := range tests {
		i, err := f.ForResource(tc.gvr)
		if err != nil {
			t.Fatalf("ForResource(%v): %v", tc.gvr, err)
		}
		listers[tc.gvr] = i
	}
	f.Start(ctx.Done())
	shared.WaitForCacheSync(ctx.Done())
	f.metadata.WaitForCacheSync(ctx.Done())
	for _, tc := range tests {
		t.Run(tc.gvr.Resource, func(t *testing.T) {
			items, err := listers[tc.gvr].Lister().ByNamespace("ns").List(labels.Everything())
			if err != nil || len(items) != 1 {
				t.Fatalf("listed %d items, err %v; want one", len(items), err)
			}
			if got := fmt.Sprintf("%T", items[0]); got != tc.want {
				t.Errorf("listed a %s, want a %s", got, tc.want)
			}
			if got, ok := items[0].(*metav1.PartialObjectMetadata); ok && got.ManagedFields != nil {
				t.Errorf("metadata kept its managedFields")
			}
		})
	}

}

package objects

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager"
)

// keepTimesOfNoOp runs kube's IgnoreManagedFieldsTimestampsTransformer, which kube's registry
// store runs on every update: when an update leaves the object as it was but for the times of
// its managedFields entries, the stored times stay (and the write is a no-op). It reports
// whether it changed obj. The transformer decodes both objects' managedFields, so it runs only
// when a time differs.
func keepTimesOfNoOp(ctx context.Context, obj, old *unstructured.Unstructured) bool {
	if !entryTimesDiffer(obj, old) {
		return false
	}
	// kube's update has the stored resourceVersion where the request named none.
	rv := obj.GetResourceVersion()
	if rv == "" {
		obj.SetResourceVersion(old.GetResourceVersion())
		defer obj.SetResourceVersion(rv)
	}
	if _, err := fieldmanager.IgnoreManagedFieldsTimestampsTransformer(ctx, obj, old); err != nil {
		return false
	}
	return !entryTimesDiffer(obj, old)
}

// entryTimesDiffer says both objects have as many managedFields entries, and some pair at the
// same place differs in its time.
func entryTimesDiffer(obj, old *unstructured.Unstructured) bool {
	a, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "managedFields")
	b, _, _ := unstructured.NestedFieldNoCopy(old.Object, "metadata", "managedFields")
	as, _ := a.([]any)
	bs, _ := b.([]any)
	if len(as) == 0 || len(as) != len(bs) {
		return false
	}
	for i := range as {
		if timeOf(as[i]) != timeOf(bs[i]) {
			return true
		}
	}
	return false
}

func timeOf(entry any) any {
	m, _ := entry.(map[string]any)
	return m["time"]
}

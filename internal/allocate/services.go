package allocate

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/upstream/servicealloc"
)

// Services allocates what Services hold, as kube's service REST storage does around its writes.
type Services struct {
	rest *servicealloc.REST
}

var _ catalog.Allocator = (*Services)(nil)

// Allocate runs kube's BeginCreate (old nil) or BeginUpdate on obj, a v1 Service.
func (s *Services) Allocate(ctx context.Context, obj, old *unstructured.Unstructured, dryRun bool) (catalog.Allocation, error) {
	svc, err := toInternal(obj)
	if err != nil {
		return nil, err
	}
	var finish servicealloc.FinishFunc
	if old == nil {
		finish, err = s.rest.BeginCreate(ctx, svc, dryRun)
	} else {
		oldSvc, cerr := toInternal(old)
		if cerr != nil {
			return nil, cerr
		}
		finish, err = s.rest.BeginUpdate(ctx, svc, oldSvc, dryRun)
	}
	if err != nil {
		return nil, err
	}
	if err := setSpec(obj, svc); err != nil {
		finish(ctx, false)
		return nil, err
	}
	return allocation(finish), nil
}

// Release frees a deleted Service's IPs and node ports (kube's afterDelete).
func (s *Services) Release(ctx context.Context, obj *unstructured.Unstructured) {
	svc, err := toInternal(obj)
	if err != nil {
		klog.ErrorS(err, "releasing a deleted Service", "service", obj.GetNamespace()+"/"+obj.GetName())
		return
	}
	s.rest.AfterDelete(svc)
}

// allocation is kube's FinishFunc of BeginCreate/BeginUpdate.
type allocation servicealloc.FinishFunc

var _ catalog.Allocation = allocation(nil)

func (a allocation) Finish(ctx context.Context, landed bool) { a(ctx, landed) }

// toInternal converts a defaulted v1 Service to kube's internal type, where servicealloc works.
func toInternal(u *unstructured.Unstructured) (*api.Service, error) {
	v1 := &corev1.Service{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, v1); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Service %q: %v", u.GetName(), err))
	}
	svc := &api.Service{}
	if err := legacyscheme.Scheme.Convert(v1, svc, nil); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Service %q: %v", u.GetName(), err))
	}
	return svc, nil
}

// setSpec writes svc's spec, where allocation happened, back into u.
func setSpec(u *unstructured.Unstructured, svc *api.Service) error {
	v1 := &corev1.Service{}
	if err := legacyscheme.Scheme.Convert(svc, v1, nil); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("Service %q: %v", u.GetName(), err))
	}
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1.Spec)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("Service %q: %v", u.GetName(), err))
	}
	u.Object["spec"] = spec
	return nil
}

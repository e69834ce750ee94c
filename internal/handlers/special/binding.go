package special

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/validation"
	kubefeatures "k8s.io/kubernetes/pkg/features"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/handlers"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/routing"
)

var coreV1 = []schema.GroupVersion{{Version: "v1"}}

// binder binds Pods to nodes: POST bindings (the name is the Binding's) and POST
// pods/{name}/binding, as kube's LegacyBindingREST and BindingREST.
type binder struct{ objects *objects.Service }

var _ handlers.Endpoint = (*binder)(nil)

// Serve binds the Pod: 201 and a success Status.
func (b *binder) Serve(rq *handlers.Request) error {
	info := rq.Info()
	// pods/binding takes the Binding's uid and resourceVersion as preconditions.
	obj, opts, warnings, err := rq.DecodeCreate(handlers.Body{Kind: "Binding", Versions: coreV1, KeepSystemFields: info.Subresource == "binding"})
	if err != nil {
		return err
	}
	rq.Warn(warnings)
	binding := obj.(*api.Binding)
	if err := checkBinding(info, binding); err != nil {
		return err
	}
	pods, ok := b.objects.Catalog().Lookup(catalog.PodsGVR)
	if !ok {
		return handlers.ErrNoRoute
	}
	_, err = b.objects.UpdateDirect(rq.Context(), pods, binding.Namespace, binding.Name, assignPod(b.objects, pods, binding),
		objects.WriteOptions{DryRun: len(opts.DryRun) > 0})
	if err != nil {
		return bindingError(binding, err)
	}
	return rq.RespondSuccess(http.StatusCreated)
}

// checkBinding is kube's check of a Binding against its URL, and its validation.
func checkBinding(info routing.RequestInfo, binding *api.Binding) error {
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(info.Namespace, binding); err != nil {
		return err
	}
	name := info.Name
	if info.Subresource == "" {
		name = binding.Name // LegacyBindingREST binds the Pod the Binding names
	}
	if name != binding.Name {
		return apierrors.NewBadRequest("name in URL does not match name in Binding object")
	}
	if errs := validation.ValidatePodBinding(binding); len(errs) != 0 {
		// kube answers 500 with this message; bad input is a 400 here.
		return apierrors.NewBadRequest(errs.ToAggregate().Error())
	}
	return nil
}

// bindingError is kube's assignPod's answer: what is not an API error is a conflict of the
// binding.
func bindingError(binding *api.Binding, err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return err
	}
	if _, ok := err.(apierrors.APIStatus); !ok {
		return apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, binding.Name, err)
	}
	return err
}

// assignPod is kube's setPodNodeAndMetadata (pkg/registry/core/pod/storage): the Pod gets the
// node if it has none, the Binding's annotations (and labels, with PodTopologyLabelsAdmission)
// and the PodScheduled condition. Its errors are plain, as kube's, except the preconditions.
func assignPod(svc *objects.Service, pods *catalog.Resource, binding *api.Binding) objects.Mutation {
	return func(current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		if err := svc.CheckStoragePreconditions(pods, current, binding.UID, binding.ResourceVersion); err != nil {
			return nil, err
		}
		internal, err := handlers.ToInternal(current)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		pod := internal.(*api.Pod)
		if pod.DeletionTimestamp != nil {
			return nil, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name)
		}
		if pod.Spec.NodeName != "" {
			return nil, fmt.Errorf("pod %v is already assigned to node %q", pod.Name, pod.Spec.NodeName)
		}
		if len(pod.Spec.SchedulingGates) != 0 {
			return nil, fmt.Errorf("pod %v has non-empty .spec.schedulingGates", pod.Name)
		}
		pod.Spec.NodeName = binding.Target.Name
		if utilfeature.DefaultFeatureGate.Enabled(kubefeatures.ClearingNominatedNodeNameAfterBinding) {
			pod.Status.NominatedNodeName = ""
		}
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		for k, v := range binding.Annotations {
			pod.Annotations[k] = v
		}
		podutil.DropInitContainerAnnotations(pod.Annotations)
		if utilfeature.DefaultFeatureGate.Enabled(kubefeatures.PodTopologyLabelsAdmission) && len(binding.Labels) > 0 {
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			for k, v := range binding.Labels {
				pod.Labels[k] = v
			}
		}
		podutil.UpdatePodCondition(&pod.Status, &api.PodCondition{Type: api.PodScheduled, Status: api.ConditionTrue})
		out, err := handlers.ToServed(pod, pods.GroupVersion)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		out.SetResourceVersion("") // retried on a concurrent write, as kube's GuaranteedUpdate
		return out, nil
	}
}

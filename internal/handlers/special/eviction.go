package special

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/util/retry"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/policy"
	"k8s.io/utils/ptr"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/handlers"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/routing"
)

// What follows is kube's EvictionREST (pkg/registry/core/pod/storage/eviction.go) over lapis's
// objects: its checks, messages and retries, in its order.

var (
	pdbResource = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
	v1Eviction  = schema.GroupVersionKind{Group: "policy", Version: "v1", Kind: "Eviction"}
	evictionGVs = []schema.GroupVersion{{Group: "policy", Version: "v1"}, {Group: "policy", Version: "v1beta1"}}
)

// maxDisruptedPodSize is kube's MaxDisruptedPodSize.
const maxDisruptedPodSize = 2000

// evictionsRetry is kube's EvictionsRetry.
var evictionsRetry = wait.Backoff{Steps: 20, Duration: 500 * time.Millisecond, Factor: 1.0, Jitter: 0.1}

// pdbStatusManager is who the budget's status update is recorded as (kube-apiserver writes it
// through its loopback client).
const pdbStatusManager = "kube-apiserver"

// evictions is pods/eviction.
type evictions struct{ objects *objects.Service }

var _ handlers.Endpoint = (*evictions)(nil)

// evicter is one eviction: the Pod and budget resources, where and as whom.
type evicter struct {
	objects    *objects.Service
	ctx        context.Context
	pods, pdbs *catalog.Resource
	namespace  string
}

// Serve evicts a Pod (POST pods/{name}/eviction): 201 and a success Status once it is
// deleted, 429 when a PodDisruptionBudget forbids it.
func (e *evictions) Serve(rq *handlers.Request) error {
	obj, opts, warnings, err := rq.DecodeCreate(handlers.Body{Kind: "Eviction", Versions: evictionGVs})
	if err != nil {
		return err
	}
	rq.Warn(warnings)
	eviction := obj.(*policy.Eviction)
	if err := checkEviction(rq.Info(), eviction); err != nil {
		return err
	}
	deleteOptions, err := propagateDryRun(eviction, &opts)
	if err != nil {
		return err
	}
	pods, ok := e.objects.Catalog().Lookup(catalog.PodsGVR)
	if !ok {
		return handlers.ErrNoRoute
	}
	pdbs, ok := e.objects.Catalog().Lookup(pdbResource)
	if !ok {
		return handlers.ErrNoRoute
	}
	ev := &evicter{objects: e.objects, ctx: rq.Context(), pods: pods, pdbs: pdbs, namespace: rq.Info().Namespace}
	if err := ev.evict(eviction.Name, deleteOptions); err != nil {
		return err
	}
	return rq.RespondSuccess(http.StatusCreated)
}

// checkEviction is kube's check of an Eviction against its URL and of its options.
func checkEviction(info routing.RequestInfo, eviction *policy.Eviction) error {
	if err := rest.EnsureObjectNamespaceMatchesRequestNamespace(info.Namespace, eviction); err != nil {
		return err
	}
	if info.Name != eviction.Name {
		return apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	if eviction.DeleteOptions != nil && ptr.Deref(eviction.DeleteOptions.IgnoreStoreReadErrorWithClusterBreakingPotential, false) {
		return apierrors.NewInvalid(v1Eviction.GroupKind(), eviction.Name, field.ErrorList{
			field.Invalid(field.NewPath("deleteOptions").Child("ignoreStoreReadErrorWithClusterBreakingPotential"), true, "can not be set for pod eviction, try after removing the option"),
		})
	}
	return nil
}

// propagateDryRun is kube's: the request's dry-run goes into the eviction's DeleteOptions.
func propagateDryRun(eviction *policy.Eviction, options *metav1.CreateOptions) (*metav1.DeleteOptions, error) {
	if eviction.DeleteOptions == nil {
		return &metav1.DeleteOptions{DryRun: options.DryRun}, nil
	}
	if len(eviction.DeleteOptions.DryRun) == 0 {
		eviction.DeleteOptions.DryRun = options.DryRun
		return eviction.DeleteOptions, nil
	}
	if len(options.DryRun) == 0 {
		return eviction.DeleteOptions, nil
	}
	if !reflect.DeepEqual(options.DryRun, eviction.DeleteOptions.DryRun) {
		// kube answers 500 with this message; bad input is a 400 here.
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Non-matching dry-run options in request and content: %v and %v", options.DryRun, eviction.DeleteOptions.DryRun))
	}
	return eviction.DeleteOptions, nil
}

// evict is the body of kube's EvictionREST.Create.
func (e *evicter) evict(name string, original *metav1.DeleteOptions) error {
	var pod *api.Pod
	deleted := false
	shouldRetry := apierrors.IsConflict
	if !resourceVersionIsUnset(original) {
		shouldRetry = func(error) bool { return false }
	}
	err := retry.OnError(evictionsRetry, shouldRetry, func() error {
		var err error
		if pod, err = e.getPod(name); err != nil {
			return err
		}
		if !canIgnorePDB(pod) {
			return nil
		}
		options := original
		if shouldEnforceResourceVersion(pod) && resourceVersionIsUnset(original) {
			options = options.DeepCopy()
			setPreconditionsResourceVersion(options, &pod.ResourceVersion)
		}
		if err := e.addConditionAndDeletePod(name, options); err != nil {
			return err
		}
		deleted = true
		return nil
	})
	if err != nil || deleted {
		return err
	}

	pdbName, updateDeletionOptions, err := e.budgetAllows(pod, len(original.DryRun) > 0)
	if wait.Interrupted(err) {
		err = apierrors.NewTimeoutError(fmt.Sprintf("couldn't update PodDisruptionBudget %q due to conflicts", pdbName), 10)
	}
	if err != nil {
		return err
	}

	options := original
	if updateDeletionOptions {
		options = options.DeepCopy()
		setPreconditionsResourceVersion(options, &pod.ResourceVersion)
	}
	err = e.addConditionAndDeletePod(name, options)
	if err != nil && apierrors.IsConflict(err) && updateDeletionOptions &&
		(original.Preconditions == nil || original.Preconditions.ResourceVersion == nil) {
		return createTooManyRequestsError(pdbName)
	}
	return err
}

// budgetAllows is kube's check of the Pod's disruption budget, decremented if it allows the
// eviction: the budget's name, and whether the Pod, not ready, may go regardless (to be
// deleted at the version read).
func (e *evicter) budgetAllows(pod *api.Pod, dryRun bool) (string, bool, error) {
	pdbs, err := e.podDisruptionBudgets(pod)
	if err != nil {
		return "", false, err
	}
	if len(pdbs) > 1 {
		// kube answers with a Status of code 500; a configuration it does not support is
		// a 400 here.
		return "", false, apierrors.NewBadRequest("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")
	}
	if len(pdbs) == 0 {
		return "", false, nil
	}
	pdb := &pdbs[0]
	pdbName := pdb.Name
	if !podutil.IsPodReady(pod) {
		if pdb.Spec.UnhealthyPodEvictionPolicy != nil && *pdb.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow {
			return pdbName, true, nil
		}
		if pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0 {
			return pdbName, true, nil
		}
	}
	refresh := false
	return pdbName, false, retry.RetryOnConflict(evictionsRetry, func() error {
		if refresh {
			var err error
			if pdb, err = e.getPDB(pdbName); err != nil {
				return err
			}
		}
		if err := e.checkAndDecrement(pod.Name, *pdb, dryRun); err != nil {
			refresh = true
			return err
		}
		return nil
	})
}

func (e *evicter) getPod(name string) (*api.Pod, error) {
	u, err := e.objects.Get(e.ctx, e.pods, e.namespace, name)
	if err != nil {
		return nil, err
	}
	obj, err := handlers.ToInternal(u)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return obj.(*api.Pod), nil
}

func (e *evicter) getPDB(name string) (*policyv1.PodDisruptionBudget, error) {
	u, err := e.objects.Get(e.ctx, e.pdbs, e.namespace, name)
	if err != nil {
		return nil, err
	}
	return pdbFrom(u)
}

func pdbFrom(u *unstructured.Unstructured) (*policyv1.PodDisruptionBudget, error) {
	var pdb policyv1.PodDisruptionBudget
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pdb); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return &pdb, nil
}

// podDisruptionBudgets are the budgets whose selector matches the Pod.
func (e *evicter) podDisruptionBudgets(pod *api.Pod) ([]policyv1.PodDisruptionBudget, error) {
	items, _, err := e.objects.List(e.ctx, e.pdbs, pod.Namespace, objects.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []policyv1.PodDisruptionBudget
	for _, u := range items {
		pdb, err := pdbFrom(u)
		if err != nil {
			return nil, err
		}
		if pdb.Namespace != pod.Namespace {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !selector.Matches(labels.Set(pod.Labels)) {
			continue // an invalid selector matches nothing
		}
		out = append(out, *pdb)
	}
	return out, nil
}

// addConditionAndDeletePod marks the Pod as disrupted (DisruptionTarget), unless dry-run, and
// deletes it.
func (e *evicter) addConditionAndDeletePod(name string, options *metav1.DeleteOptions) error {
	if len(options.DryRun) == 0 {
		res, err := e.objects.UpdateDirect(e.ctx, e.pods, e.namespace, name, func(current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
			if p := options.Preconditions; p != nil {
				if uid := p.UID; uid != nil && len(*uid) > 0 && *uid != current.GetUID() {
					return nil, apierrors.NewConflict(schema.GroupResource{Resource: "Pod"}, current.GetName(),
						fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *uid, current.GetUID()))
				}
				if rv := p.ResourceVersion; rv != nil && len(*rv) > 0 && *rv != current.GetResourceVersion() {
					return nil, apierrors.NewConflict(schema.GroupResource{Resource: "Pod"}, current.GetName(),
						fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *rv, current.GetResourceVersion()))
				}
			}
			obj, err := handlers.ToInternal(current)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			pod := obj.(*api.Pod)
			podutil.UpdatePodCondition(&pod.Status, &api.PodCondition{
				Type: api.DisruptionTarget, Status: api.ConditionTrue, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting",
			})
			out, err := handlers.ToServed(pod, e.pods.GroupVersion)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			out.SetResourceVersion("")
			return out, nil
		}, objects.WriteOptions{})
		if err != nil {
			return err
		}
		if !resourceVersionIsUnset(options) {
			// The condition changed the Pod: the precondition is on that version now.
			options = options.DeepCopy()
			rv := res.Object.GetResourceVersion()
			options.Preconditions.ResourceVersion = &rv
		}
	}
	_, err := e.objects.Delete(e.ctx, e.pods, e.namespace, name, objects.DeleteOptions{
		DryRun: len(options.DryRun) > 0, Preconditions: options.Preconditions, PropagationPolicy: handlers.PropagationPolicy(*options),
	})
	return err
}

// checkAndDecrement is kube's: the budget must allow a disruption, which it then records.
func (e *evicter) checkAndDecrement(podName string, pdb policyv1.PodDisruptionBudget, dryRun bool) error {
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return createTooManyRequestsError(pdb.Name)
	}
	if pdb.Status.DisruptionsAllowed < 0 {
		return forbiddenByBudget(pdb.Name, "pdb disruptions allowed is negative", "pdb disruptions allowed is negative")
	}
	if len(pdb.Status.DisruptedPods) > maxDisruptedPodSize {
		return forbiddenByBudget(pdb.Name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
			"too many pending evictions not confirmed by PDB controller")
	}
	if pdb.Status.DisruptionsAllowed == 0 {
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		condition := meta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
		var msg string
		switch {
		case condition != nil && condition.Status == metav1.ConditionFalse && len(condition.Message) > 0 && condition.Reason == policyv1.SyncFailedReason:
			msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", pdb.Name, condition.Message)
		case pdb.Status.CurrentHealthy <= pdb.Status.DesiredHealthy:
			msg = fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)
		case condition != nil && condition.Status == metav1.ConditionFalse && len(condition.Message) > 0:
			msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", pdb.Name, condition.Reason, condition.Message)
		default:
			msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", pdb.Name)
		}
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: msg})
		return err
	}

	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptionsAllowed == 0 {
		pdbhelper.UpdateDisruptionAllowedCondition(&pdb)
	}
	if dryRun {
		return nil
	}
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	pdb.Status.DisruptedPods[podName] = metav1.Time{Time: time.Now()}
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&pdb)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	_, err = e.objects.Update(e.ctx, e.pdbs, e.namespace, pdb.Name, func(*unstructured.Unstructured) (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{Object: status}
		u.SetGroupVersionKind(policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"))
		return u, nil // at the version read: a concurrent change is a conflict, and retried
	}, objects.WriteOptions{Subresource: "status", Manager: pdbStatusManager})
	return err
}

func forbiddenByBudget(name, reason, cause string) error {
	err := apierrors.NewForbidden(policy.Resource("poddisruptionbudget"), name, errors.New(reason))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: %s", name, cause),
	})
	return err
}

func createTooManyRequestsError(name string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type: policyv1.DisruptionBudgetCause, Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", name),
	})
	return err
}

// canIgnorePDB: terminal, pending and deleting Pods are deleted without asking their budget.
func canIgnorePDB(pod *api.Pod) bool {
	return pod.Status.Phase == api.PodSucceeded || pod.Status.Phase == api.PodFailed ||
		pod.Status.Phase == api.PodPending || !pod.DeletionTimestamp.IsZero()
}

func shouldEnforceResourceVersion(pod *api.Pod) bool {
	return !(pod.Status.Phase == api.PodSucceeded || pod.Status.Phase == api.PodFailed || !pod.DeletionTimestamp.IsZero())
}

func resourceVersionIsUnset(options *metav1.DeleteOptions) bool {
	return options.Preconditions == nil || options.Preconditions.ResourceVersion == nil
}

func setPreconditionsResourceVersion(options *metav1.DeleteOptions, resourceVersion *string) {
	if options.Preconditions == nil {
		options.Preconditions = &metav1.Preconditions{}
	}
	options.Preconditions.ResourceVersion = resourceVersion
}

package authn

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	genericfeatures "k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/warning"
	authenticationapi "k8s.io/kubernetes/pkg/apis/authentication"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/serviceaccount"
)

// maxExtendedExpirationSeconds is kube-apiserver's --service-account-max-extended-expiration
// default: how long an extended Pod-bound token lives.
const maxExtendedExpirationSeconds = serviceaccount.ExpirationExtensionSeconds

// IssueToken does what kube's TokenREST.Create (pkg/registry/core/serviceaccount/storage)
// does once it has looked the ServiceAccount sa and the object the request binds to up: req
// is the validated request (kube's internal type), bound the object its boundObjectRef names
// (a *corev1.Pod, *corev1.Secret or *corev1.Node), or nil. It defaults the audiences, checks the
// bound object (its kind, the Pod's ServiceAccount, its uid), caps and extends the expiration,
// and returns a copy of req with the signed token in its status. Warnings go to ctx's warning
// recorder. The Node a Pod runs on is looked up through UseServiceAccounts' getter.
func (a *Authenticator) IssueToken(ctx context.Context, sa *corev1.ServiceAccount, req *authenticationapi.TokenRequest, bound runtime.Object) (*authenticationapi.TokenRequest, error) {
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = a.APIAudiences()
	}
	if len(req.Name) == 0 {
		req.Name = sa.Name
	}
	if len(req.Namespace) == 0 {
		req.Namespace = sa.Namespace
	}
	if len(req.UID) == 0 {
		req.UID = sa.UID
	}
	// The expiration returned must not be later than the token's.
	now := time.Now()
	req.CreationTimestamp = metav1.NewTime(now)
	req.Status = authenticationapi.TokenRequestStatus{}

	var (
		pod    *api.Pod
		node   *api.Node
		secret *api.Secret
	)
	if ref := req.Spec.BoundObjectRef; ref != nil {
		var uid types.UID
		gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		switch {
		case gvk.Group == "" && gvk.Kind == "Pod":
			p, ok := bound.(*corev1.Pod)
			if !ok {
				return nil, missingBound(ref)
			}
			if sa.Name != p.Spec.ServiceAccountName {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", sa.Name))
			}
			pod = &api.Pod{ObjectMeta: p.ObjectMeta}
			uid = p.UID
			if utilfeature.DefaultFeatureGate.Enabled(features.ServiceAccountTokenPodNodeInfo) && p.Spec.NodeName != "" {
				var err error
				if node, err = a.podNode(ctx, p.Spec.NodeName); err != nil {
					return nil, err
				}
			}
		case gvk.Group == "" && gvk.Kind == "Node":
			if !utilfeature.DefaultFeatureGate.Enabled(features.ServiceAccountTokenNodeBinding) {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to a Node object as the %q feature-gate is disabled", features.ServiceAccountTokenNodeBinding))
			}
			n, ok := bound.(*corev1.Node)
			if !ok {
				return nil, missingBound(ref)
			}
			node = &api.Node{ObjectMeta: n.ObjectMeta}
			uid = n.UID
		case gvk.Group == "" && gvk.Kind == "Secret":
			s, ok := bound.(*corev1.Secret)
			if !ok {
				return nil, missingBound(ref)
			}
			secret = &api.Secret{ObjectMeta: s.ObjectMeta}
			uid = s.UID
		case gvk.GroupVersion() == admissionregistrationv1.SchemeGroupVersion && (gvk.Kind == "ValidatingWebhookConfiguration" || gvk.Kind == "MutatingWebhookConfiguration"):
			if !utilfeature.DefaultFeatureGate.Enabled(genericfeatures.APIServerWebhookAuthenticationToken) {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s (feature gate %s is disabled)", gvk.String(), genericfeatures.APIServerWebhookAuthenticationToken))
			}
			// lapis does not issue webhook-bound tokens (an alpha feature of kube 1.37).
			return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
		}
		if ref.UID != "" && uid != ref.UID {
			return nil, apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
				fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
		}
	}

	if a.maxExpirationSeconds > 0 && req.Spec.ExpirationSeconds > a.maxExpirationSeconds {
		warning.AddWarning(ctx, "", fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", req.Spec.ExpirationSeconds, a.maxExpirationSeconds))
		req.Spec.ExpirationSeconds = a.maxExpirationSeconds
	}
	// kube's safe transition of projected tokens: a Pod-bound token asked for kubelet's 3607 s
	// for the API audiences warns after that and fails only after the extension.
	var warnAfter int64
	exp := req.Spec.ExpirationSeconds
	if a.extendExpiration && pod != nil && exp == serviceaccount.WarnOnlyBoundTokenExpirationSeconds && sets.New(a.audiences...).HasAll(req.Spec.Audiences...) {
		warnAfter = exp
		exp = maxExtendedExpirationSeconds
	}

	internalSA := api.ServiceAccount{ObjectMeta: sa.ObjectMeta}
	sc, pc, err := serviceaccount.Claims(internalSA, pod, secret, node, nil, nil, exp, warnAfter, req.Spec.Audiences, req.Spec.Attestations)
	if err != nil {
		return nil, err
	}
	token, err := a.issuer.GenerateToken(ctx, sc, pc)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("failed to generate token: %v", err))
	}
	out := req.DeepCopy()
	out.Status = authenticationapi.TokenRequestStatus{
		Token:               token,
		ExpirationTimestamp: metav1.Time{Time: now.Add(time.Duration(out.Spec.ExpirationSeconds) * time.Second)},
	}
	return out, nil
}

// podNode is the Node a bound Pod runs on, for the token's node claims: kube embeds only its
// name when it does not exist.
func (a *Authenticator) podNode(ctx context.Context, name string) (*api.Node, error) {
	n, err := a.lookups.GetNode(ctx, name)
	switch {
	// Before the server can look Nodes up, as if it did not exist.
	case errors.Is(err, errNotReady), apierrors.IsNotFound(err):
		return &api.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
	case err != nil:
		return nil, apierrors.NewInternalError(err)
	}
	return &api.Node{ObjectMeta: n.ObjectMeta}, nil
}

// missingBound is a caller's mistake: the bound object was not given.
func missingBound(ref *authenticationapi.BoundObjectReference) error {
	return apierrors.NewInternalError(fmt.Errorf("the %s %q the token is bound to was not looked up", ref.Kind, ref.Name))
}

package authn

import (
	"context"
	"errors"
	"sync/atomic"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	sacontroller "k8s.io/kubernetes/pkg/controller/serviceaccount"
	"k8s.io/kubernetes/pkg/serviceaccount"
)

// NewGetter is kube-apiserver's ServiceAccountTokenGetter: the factory's listers first, the
// client when they miss. It also writes Secrets (kube's legacy validator labels a legacy
// token's Secret with the day it was last used). The client must not authenticate with a
// ServiceAccount token. The factory's informers it asks for start with factory.Start.
func NewGetter(client kubernetes.Interface, factory informers.SharedInformerFactory) serviceaccount.ServiceAccountTokenGetter {
	core := factory.Core().V1()
	admission := factory.Admissionregistration().V1()
	return getter{
		ServiceAccountTokenGetter: sacontroller.NewGetterFromClient(client,
			core.Secrets().Lister(), core.ServiceAccounts().Lister(), core.Pods().Lister(),
			core.Nodes().Lister(), // kube's ServiceAccountTokenNodeBindingValidation is GA
			admission.ValidatingWebhookConfigurations().Lister(), admission.MutatingWebhookConfigurations().Lister()),
		SecretsGetter: client.CoreV1(),
	}
}

type getter struct {
	serviceaccount.ServiceAccountTokenGetter
	typedcorev1.SecretsGetter
}

// errNotReady is what ServiceAccount tokens get until the server can look objects up.
var errNotReady = errors.New("service account token lookups are not ready yet")

// lookups is the getter kube's validators hold: the one UseServiceAccounts sets, or none yet.
type lookups struct {
	current atomic.Pointer[getter]
}

func (l *lookups) set(g serviceaccount.ServiceAccountTokenGetter) {
	next := getter{ServiceAccountTokenGetter: g, SecretsGetter: noSecretWrites{}}
	if w, ok := g.(typedcorev1.SecretsGetter); ok {
		next.SecretsGetter = w
	}
	l.current.Store(&next)
}

func (l *lookups) get() (*getter, error) {
	if g := l.current.Load(); g != nil {
		return g, nil
	}
	return nil, errNotReady
}

func (l *lookups) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	g, err := l.get()
	if err != nil {
		return nil, err
	}
	return g.GetServiceAccount(ctx, namespace, name)
}

func (l *lookups) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	g, err := l.get()
	if err != nil {
		return nil, err
	}
	return g.GetPod(ctx, namespace, name)
}

func (l *lookups) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	g, err := l.get()
	if err != nil {
		return nil, err
	}
	return g.GetSecret(ctx, namespace, name)
}

func (l *lookups) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	g, err := l.get()
	if err != nil {
		return nil, err
	}
	return g.GetNode(ctx, name)
}

func (l *lookups) GetValidatingWebhookConfiguration(ctx context.Context, name string) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	g, err := l.get()
	if err != nil {
		return nil, err
	}
	return g.GetValidatingWebhookConfiguration(ctx, name)
}

func (l *lookups) GetMutatingWebhookConfiguration(ctx context.Context, name string) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	g, err := l.get()
	if err != nil {
		return nil, err
	}
	return g.GetMutatingWebhookConfiguration(ctx, name)
}

// Secrets is where kube's legacy validator records when a legacy token was last used.
func (l *lookups) Secrets(namespace string) typedcorev1.SecretInterface {
	if g := l.current.Load(); g != nil {
		return g.Secrets(namespace)
	}
	return noSecretWrites{}.Secrets(namespace)
}

// noSecretWrites drops the legacy validator's last-used labels, for a getter that cannot
// write Secrets. The validator only patches.
type noSecretWrites struct{}

func (noSecretWrites) Secrets(string) typedcorev1.SecretInterface { return droppedPatches{} }

type droppedPatches struct{ typedcorev1.SecretInterface }

func (droppedPatches) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*corev1.Secret, error) {
	return &corev1.Secret{}, nil
}

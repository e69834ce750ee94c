package serviceaccount

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/controllers/namespacequeue"
	"github.com/lapis-dev/lapis/internal/objects"
)

const (
	// Name is the ServiceAccount every active namespace gets.
	Name = "default"
	// manager is the field manager kube-controller-manager's client records.
	manager = "kube-controller-manager"
)

// Controller creates the default ServiceAccount of each namespace.
type Controller struct {
	objects *objects.Service
	log     *slog.Logger
	queue   *namespacequeue.Queue
}

// NewController returns a serviceaccount controller over svc.
func NewController(svc *objects.Service, log *slog.Logger) *Controller {
	return &Controller{objects: svc, log: log, queue: namespacequeue.New("serviceaccount")}
}

// Run follows namespaces and ServiceAccounts until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	namespaces, ok1 := c.objects.Catalog().Lookup(catalog.NamespacesGVR)
	accounts, ok2 := c.objects.Catalog().Lookup(catalog.ServiceAccountsGVR)
	if !ok1 || !ok2 {
		c.log.Error("serviceaccount controller: namespaces or serviceaccounts not served")
		return
	}
	// As kube: every namespace added or updated is checked, and so is the namespace of every
	// ServiceAccount deleted (its default one may be gone).
	go c.objects.Follow(ctx, namespaces, func(ns *unstructured.Unstructured, deleted bool) {
		if !deleted {
			c.queue.Add(ns.GetName())
		}
	})
	go c.objects.Follow(ctx, accounts, func(sa *unstructured.Unstructured, deleted bool) {
		if deleted && sa.GetName() == Name {
			c.queue.Add(sa.GetNamespace())
		}
	})
	c.queue.Run(ctx, func(ctx context.Context, ns string) error {
		return c.sync(ctx, namespaces, accounts, ns)
	}, func(ns string, err error) {
		c.log.Warn("creating the default ServiceAccount failed", "namespace", ns, "err", err)
	})
}

// sync creates the namespace's default ServiceAccount if the namespace is active and has none.
func (c *Controller) sync(ctx context.Context, namespaces, accounts *catalog.Resource, name string) error {
	ns, err := c.objects.Get(ctx, namespaces, "", name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase"); phase != string(corev1.NamespaceActive) || ns.GetDeletionTimestamp() != nil {
		return nil
	}
	switch _, err := c.objects.Get(ctx, accounts, name, Name); {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return err
	}
	// Only the name, as kube's controller sends it: no labels, nothing else.
	sa := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata": map[string]any{"name": Name, "namespace": name},
	}}
	_, err = c.objects.Create(ctx, accounts, name, sa, objects.WriteOptions{Manager: manager})
	// A namespace that went Terminating or away meanwhile gets nothing.
	if err == nil || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return nil
	}
	return err
}

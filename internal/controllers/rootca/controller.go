package rootca

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/controllers/namespacequeue"
	"github.com/lapis-dev/lapis/internal/objects"
)

// The ConfigMap's name and annotation, as kube's publisher writes them.
const (
	ConfigMapName         = "kube-root-ca.crt"
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
	// manager is the field manager kube-controller-manager's client records.
	manager = "kube-controller-manager"
	dataKey = "ca.crt"
)

// Controller publishes the CA bundle in every namespace.
type Controller struct {
	objects  *objects.Service
	log      *slog.Logger
	caPEM    []byte
	ours     [][]byte // DER of each certificate in caPEM
	subjects [][]byte // their subjects
	queue    *namespacequeue.Queue
}

// NewController returns a publisher of caPEM (one or more PEM certificates) over svc.
func NewController(svc *objects.Service, caPEM []byte, log *slog.Logger) *Controller {
	c := &Controller{objects: svc, log: log, caPEM: caPEM, queue: namespacequeue.New("root_ca_cert_publisher")}
	for _, cert := range certificates(caPEM) {
		c.ours = append(c.ours, cert.Raw)
		c.subjects = append(c.subjects, cert.RawSubject)
	}
	return c
}

// Run follows namespaces and the published ConfigMaps until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	namespaces, ok1 := c.objects.Catalog().Lookup(catalog.NamespacesGVR)
	configMaps, ok2 := c.objects.Catalog().Lookup(catalog.ConfigMapsGVR)
	if !ok1 || !ok2 {
		c.log.Error("root CA publisher: namespaces or configmaps not served")
		return
	}
	// As kube: active namespaces are checked on every change, and the namespace of every
	// change to (or deletion of) a published ConfigMap.
	go c.objects.Follow(ctx, namespaces, func(ns *unstructured.Unstructured, deleted bool) {
		if phase, _, _ := unstructured.NestedString(ns.Object, "status", "phase"); !deleted && phase == string(corev1.NamespaceActive) && ns.GetDeletionTimestamp() == nil {
			c.queue.Add(ns.GetName())
		}
	})
	go c.objects.Follow(ctx, configMaps, func(cm *unstructured.Unstructured, _ bool) {
		if cm.GetName() == ConfigMapName {
			c.queue.Add(cm.GetNamespace())
		}
	})
	c.queue.Run(ctx, func(ctx context.Context, ns string) error {
		return c.sync(ctx, configMaps, ns)
	}, func(ns string, err error) {
		// Losing a race with another writer is retried quietly.
		if !apierrors.IsAlreadyExists(err) && !apierrors.IsConflict(err) {
			c.log.Warn("publishing the root CA failed", "namespace", ns, "err", err)
		}
	})
}

// sync creates the namespace's ConfigMap, or puts its data and annotation back.
func (c *Controller) sync(ctx context.Context, configMaps *catalog.Resource, ns string) error {
	cm, err := c.objects.Get(ctx, configMaps, ns, ConfigMapName)
	if apierrors.IsNotFound(err) {
		created := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": ConfigMapName, "namespace": ns,
				"annotations": map[string]any{DescriptionAnnotation: Description}},
			"data": map[string]any{dataKey: string(c.caPEM)},
		}}
		_, err = c.objects.Create(ctx, configMaps, ns, created, objects.WriteOptions{Manager: manager})
		// A namespace that is gone or Terminating gets nothing.
		if apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	if c.current(cm) {
		return nil
	}
	_, err = c.objects.Update(ctx, configMaps, ns, ConfigMapName, func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		data, _, _ := unstructured.NestedStringMap(cur.Object, "data")
		_ = unstructured.SetNestedStringMap(cur.Object, map[string]string{dataKey: c.wanted(data[dataKey], time.Now())}, "data")
		annotations := cur.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[DescriptionAnnotation] = Description
		cur.SetAnnotations(annotations)
		return cur, nil
	}, objects.WriteOptions{Manager: manager})
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile: its deletion queues the namespace again
	}
	return err
}

// current reports whether cm needs no update: as kube checks it, its data is exactly what is
// published and the description annotation is not empty.
func (c *Controller) current(cm *unstructured.Unstructured) bool {
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	want := map[string]string{dataKey: c.wanted(data[dataKey], time.Now())}
	return maps.Equal(data, want) && cm.GetAnnotations()[DescriptionAnnotation] != ""
}

// wanted is the ca.crt to publish, given the one published now. Alone, lapis publishes its CA
// bundle exactly, as kube does. When current also holds CAs of other lapis processes sharing
// the storage, it publishes all of them with its own in one order every lapis computes alike,
// so that they agree instead of overwriting each other.
func (c *Controller) wanted(current string, now time.Time) string {
	all := map[string]bool{}
	for _, cert := range certificates([]byte(current)) {
		if !c.isOurs(cert.Raw) && c.peer(cert, now) {
			all[string(cert.Raw)] = true
		}
	}
	if len(all) == 0 {
		return string(c.caPEM)
	}
	for _, der := range c.ours {
		all[string(der)] = true
	}
	var out []byte
	for _, der := range slices.Sorted(maps.Keys(all)) {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte(der)})...)
	}
	return string(out)
}

// peer reports whether cert is another lapis's CA: a valid self-signed CA certificate with the
// subject of one of ours.
func (c *Controller) peer(cert *x509.Certificate, now time.Time) bool {
	if !cert.IsCA || !bytes.Equal(cert.RawSubject, cert.RawIssuer) || now.Before(cert.NotBefore) || now.After(cert.NotAfter) {
		return false
	}
	for _, s := range c.subjects {
		if bytes.Equal(cert.RawSubject, s) {
			return cert.CheckSignatureFrom(cert) == nil
		}
	}
	return false
}

func (c *Controller) isOurs(der []byte) bool {
	for _, o := range c.ours {
		if bytes.Equal(o, der) {
			return true
		}
	}
	return false
}

// certificates parses the certificates in a PEM bundle, skipping what is not one.
func certificates(bundle []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			return out
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, cert)
		}
	}
}

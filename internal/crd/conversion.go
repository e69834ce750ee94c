package crd

import (
	"fmt"
	"sync"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/util/webhook"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// webhookConversion makes kube's CR converters (apiextensions-apiserver's CRConverterFactory)
// for CRDs whose conversion strategy is Webhook. Its factory is made on first use, with the
// service resolver and credentials set last: the controller registers stored CRDs before
// lapis listens, and so before its loopback (and the resolver over it) exists.
type webhookConversion struct {
	mu       sync.Mutex
	resolver webhook.ServiceResolver
	wrapper  webhook.AuthenticationInfoResolverWrapper
	factory  *conversion.CRConverterFactory // nil until first used, or after use() changed the setup
	gen      int                            // counts use() calls: converters made before are rebuilt
}

// use sets how service references resolve and what credentials webhooks get.
func (w *webhookConversion) use(resolver webhook.ServiceResolver, wrapper webhook.AuthenticationInfoResolverWrapper) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.resolver, w.wrapper, w.factory = resolver, wrapper, nil
	w.gen++
}

// converter builds kube's converter for crd with the current setup.
func (w *webhookConversion) converter(crd *apiextensionsv1.CustomResourceDefinition) (runtime.ObjectConvertor, int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.factory == nil {
		resolver := w.resolver
		if resolver == nil {
			// kube's own default: service references are DNS names.
			resolver = webhook.NewDefaultServiceResolver()
		}
		f, err := conversion.NewCRConverterFactory(resolver, w.wrapper)
		if err != nil {
			return nil, 0, err
		}
		w.factory = f
	}
	// The safe converter copies what it converts: callers keep their objects.
	safe, _, err := w.factory.NewConverter(crd)
	return safe, w.gen, err
}

// crdConverter converts the custom resources of one CRD (one generation of it: the controller
// makes a new one whenever the CRD changes) through kube's CR converter. It is the
// runtime.ObjectConvertor admission and field management use, and the catalogue's Conversion.
type crdConverter struct {
	crd  *apiextensionsv1.CustomResourceDefinition
	from *webhookConversion

	mu   sync.Mutex
	conv runtime.ObjectConvertor
	gen  int
}

// newCRDConverter returns the converter of crd when its strategy is Webhook; nil otherwise
// (None: versions differ only in apiVersion, which lapis's pipeline rewrites itself).
func newCRDConverter(crd *apiextensionsv1.CustomResourceDefinition, from *webhookConversion) *crdConverter {
	if from == nil || crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter {
		return nil
	}
	return &crdConverter{crd: crd, from: from, gen: -1}
}

func (c *crdConverter) get() (runtime.ObjectConvertor, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.from.mu.Lock()
	current := c.from.gen
	c.from.mu.Unlock()
	if c.conv != nil && c.gen == current {
		return c.conv, nil
	}
	conv, gen, err := c.from.converter(c.crd)
	if err != nil {
		// kube-apiserver cannot serve such a CRD either; the request fails, not lapis.
		return nil, fmt.Errorf("conversion webhook for %s: %w", c.crd.Name, err)
	}
	c.conv, c.gen = conv, gen
	return conv, nil
}

// Convert implements runtime.ObjectConvertor.
func (c *crdConverter) Convert(in, out, context any) error {
	conv, err := c.get()
	if err != nil {
		return err
	}
	return conv.Convert(in, out, context)
}

// ConvertToVersion implements runtime.ObjectConvertor.
func (c *crdConverter) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	conv, err := c.get()
	if err != nil {
		return nil, err
	}
	return conv.ConvertToVersion(in, target)
}

// ConvertFieldLabel implements runtime.ObjectConvertor.
func (c *crdConverter) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	conv, err := c.get()
	if err != nil {
		return "", "", err
	}
	return conv.ConvertFieldLabel(gvk, label, value)
}

// convertVersion converts obj to version to (catalog.Resource.ConvertVersion: field
// management's conversions between its managers' versions). obj is not modified.
func (c *crdConverter) convertVersion(obj *unstructured.Unstructured, to schema.GroupVersion) (*unstructured.Unstructured, error) {
	out, err := c.ConvertToVersion(obj, to)
	if err != nil {
		return nil, err
	}
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("converting %s to %s gave %T", obj.GroupVersionKind(), to, out)
	}
	return u, nil
}

// storageConversion converts between served version gv and the storage version. Objects go
// to the webhook without a resourceVersion, as kube-apiserver's storage encodes and decodes
// them, and come back with the one they had.
func (c *crdConverter) storageConversion(gv, storage schema.GroupVersion) *catalog.Conversion {
	convert := func(obj *unstructured.Unstructured, to schema.GroupVersion) error {
		if obj.GetAPIVersion() == to.String() {
			return nil
		}
		rv := obj.GetResourceVersion()
		in := obj
		if rv != "" {
			in = obj.DeepCopy()
			in.SetResourceVersion("")
		}
		out, err := c.convertVersion(in, to)
		if err != nil {
			return err
		}
		obj.Object = out.Object
		if rv != "" {
			obj.SetResourceVersion(rv)
		}
		return nil
	}
	return &catalog.Conversion{
		ToStorage: func(obj *unstructured.Unstructured) error {
			if err := convert(obj, storage); err != nil {
				// kube-apiserver's storage returns the converter's error as it is, which its
				// handlers answer as a 500 with the error's text and no reason.
				return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
					Code: 500, Reason: metav1.StatusReasonUnknown, Message: err.Error()}}
			}
			return nil
		},
		// A stored object that cannot be converted is kube's InternalError: the caller wraps it.
		FromStorage: func(obj *unstructured.Unstructured) error { return convert(obj, gv) },
	}
}

// admissionObjects are the ObjectInterfaces admission plugins get for crd's resources: lapis's
// unstructured ones, knowing every served version of the resource as equivalent (kube's
// apiextensions server registers them so), and converting through conv when it is set (a
// Webhook CRD). A webhook registered for another version than the request's (matchPolicy
// Equivalent) sees the object converted to its version, as on kube-apiserver.
func admissionObjects(crd *apiextensionsv1.CustomResourceDefinition, conv *crdConverter) admission.ObjectInterfaces {
	mapper := runtime.NewEquivalentResourceRegistry()
	names := crd.Status.AcceptedNames
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: names.Plural}
		kind := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind}
		mapper.RegisterKindFor(gvr, "", kind)
		if v.Subresources != nil && v.Subresources.Status != nil {
			mapper.RegisterKindFor(gvr, "status", kind)
		}
		if v.Subresources != nil && v.Subresources.Scale != nil {
			mapper.RegisterKindFor(gvr, "scale", autoscalingv1.SchemeGroupVersion.WithKind("Scale"))
		}
	}
	objs := crdObjects{ObjectInterfaces: catalog.UnstructuredObjects, mapper: mapper}
	if conv != nil {
		objs.conv = conv
	}
	return objs
}

type crdObjects struct {
	admission.ObjectInterfaces
	conv   runtime.ObjectConvertor // nil: the base's (by apiVersion)
	mapper runtime.EquivalentResourceMapper
}

func (o crdObjects) GetObjectConvertor() runtime.ObjectConvertor {
	if o.conv != nil {
		return o.conv
	}
	return o.ObjectInterfaces.GetObjectConvertor()
}

func (o crdObjects) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper { return o.mapper }

package objects

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/fieldmanager"
	"github.com/lapis-dev/lapis/internal/jsoncost"
	"github.com/lapis-dev/lapis/internal/storage"
	"github.com/lapis-dev/lapis/internal/storage/codec"
	"github.com/lapis-dev/lapis/internal/watchcache"
)

// Service reads and writes objects of any catalogued resource.
type Service struct {
	store  *storage.Store
	keys   Keys
	cat    *catalog.Catalog
	fields *fieldmanager.Managers
	caches *watchcache.Caches // nil: every read goes to storage
	now    func() time.Time
	// written spares the next update of an object lapis wrote the decoding of what it wrote.
	written lastWrites
}

// NewService returns a Service over store serving the resources in cat, keeping them at keys.
func NewService(store *storage.Store, keys Keys, cat *catalog.Catalog) *Service {
	return &Service{store: store, keys: keys, cat: cat, fields: fieldmanager.NewManagers(), now: time.Now}
}

// Catalog returns the catalogue the service serves.
func (s *Service) Catalog() *catalog.Catalog { return s.cat }

// Keys returns where the service keeps objects in etcd.
func (s *Service) Keys() Keys { return s.keys }

// Store returns the underlying store.
func (s *Service) Store() *storage.Store { return s.store }

var namespacesResource = catalog.NamespacesGVR.GroupResource()

func qualifiedResource(r *catalog.Resource) schema.GroupResource {
	return schema.GroupResource{Group: r.GroupVersion.Group, Resource: r.Name}
}

// storageError turns a store error into the API error kube-apiserver gives for it.
func storageError(r *catalog.Resource, name string, err error) error {
	gr := qualifiedResource(r)
	var corrupt *storage.CorruptError
	switch {
	case errors.As(err, &corrupt):
		return apierrors.NewInternalError(corrupt)
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, storage.ErrConflict):
		return apierrors.NewConflict(gr, name, errors.New(registryConflictMessage))
	case errors.Is(err, storage.ErrCompacted):
		return apierrors.NewResourceExpired(fmt.Sprintf("The resourceVersion for the provided list is too old."))
	case errors.Is(err, storage.ErrNoSpace):
		// 507: the request was fine, the server has no room to store it.
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
			Code: http.StatusInsufficientStorage, Message: err.Error()}}
	case errors.Is(err, storage.ErrTooLarge):
		return apierrors.NewRequestEntityTooLargeError(err.Error())
	case errors.Is(err, storage.ErrUnavailable):
		// No Retry-After on these: client-go would retry each up to ten times, for minutes.
		return apierrors.NewServiceUnavailable(err.Error())
	case errors.Is(err, storage.ErrTimeout):
		return apierrors.NewTimeoutError(err.Error(), 0)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError("request did not complete within the allowed duration", 1)
	}
	return apierrors.NewInternalError(err)
}

const registryConflictMessage = "the object has been modified; please apply your changes to the latest version and try again"

// fromStorage decodes a stored value into the object as served at r's version.
func (s *Service) fromStorage(r *catalog.Resource, kv storage.KeyValue) (*unstructured.Unstructured, error) {
	obj, err := codec.Decode(kv.Value, kv.ModRevision)
	if err != nil {
		return nil, err
	}
	return s.present(r, obj)
}

// present turns a decoded object at its stored version into the object served at r's version.
func (s *Service) present(r *catalog.Resource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if r.Conversion != nil {
		if err := r.Conversion.FromStorage(obj); err != nil {
			return nil, err
		}
	} else {
		obj.SetAPIVersion(r.GroupVersion.String())
	}
	if r.DefaultsOnRead {
		r.Behavior.Default(obj)
	}
	return obj, nil
}

// RawFromStorage returns a stored value as the JSON served at r's version, splicing in the
// resourceVersion without decoding when the stored version is the served one.
func (s *Service) rawFromStorage(r *catalog.Resource, kv storage.KeyValue) ([]byte, error) {
	if r.Conversion == nil && !r.DefaultsOnRead {
		if out, ok := codec.WithResourceVersion(kv.Value, kv.ModRevision, r.GroupVersion.String()); ok {
			return out, nil
		}
	}
	obj, err := s.fromStorage(r, kv)
	if err != nil {
		return nil, err
	}
	return obj.MarshalJSON()
}

// toStorage encodes obj as stored; its errors are API errors.
func (s *Service) toStorage(r *catalog.Resource, obj *unstructured.Unstructured) ([]byte, error) {
	if r.Conversion != nil {
		obj = obj.DeepCopy()
		if err := r.Conversion.ToStorage(obj); err != nil {
			var status apierrors.APIStatus
			if errors.As(err, &status) {
				return nil, err // kube's answer already (a conversion webhook's failure)
			}
			return nil, apierrors.NewInternalError(err)
		}
	} else if sv := r.StorageAPIVersion(); obj.GetAPIVersion() != sv {
		obj = obj.DeepCopy()
		obj.SetAPIVersion(sv)
	}
	value, err := codec.Encode(obj.Object)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if depth := jsoncost.Measure(value).Depth; depth > maxObjectDepth {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the object is nested %d levels deep (managedFields included); at most %d levels can be stored and read back", depth, maxObjectDepth))
	}
	return value, nil
}

// maxObjectDepth keeps stored objects readable: lists, watch events and Tables wrap an object
// in a few more levels, and JSON decoders stop at jsoncost.MaxDecodableDepth.
const maxObjectDepth = jsoncost.MaxDecodableDepth - 16

// Get returns the named object.
func (s *Service) Get(ctx context.Context, r *catalog.Resource, namespace, name string) (*unstructured.Unstructured, error) {
	kv, err := s.get(ctx, r, namespace, name, 0)
	if err != nil {
		return nil, err
	}
	obj, err := s.fromStorage(r, kv)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return obj, nil
}

// GetRaw returns the named object's JSON as resourceVersion asks: "" the most recent (from
// storage), "0" any (from the cache), N not older than N (from the cache once it has caught up).
func (s *Service) GetRaw(ctx context.Context, r *catalog.Resource, namespace, name, resourceVersion string) ([]byte, error) {
	if !r.Namespaced {
		namespace = ""
	}
	if resourceVersion != "" && s.caches != nil {
		c, err := s.freshCache(ctx, r, resourceVersion)
		if err == nil {
			e, _, ok := c.Get(s.keys.object(r, namespace, name))
			if !ok {
				return nil, apierrors.NewNotFound(qualifiedResource(r), name)
			}
			if e.Corrupt != nil {
				return nil, s.corruptGetError(e.Corrupt)
			}
			raw, err := s.rawFromEntry(r, e, e.ModRevision)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			return raw, nil
		}
		if !errors.Is(err, errUseStorage) {
			return nil, err
		}
	}
	if _, err := parseRevision(resourceVersion); err != nil {
		return nil, err
	}
	kv, err := s.get(ctx, r, namespace, name, 0)
	if err != nil {
		return nil, err
	}
	out, err := s.rawFromStorage(r, kv)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return out, nil
}

func (s *Service) get(ctx context.Context, r *catalog.Resource, namespace, name string, revision int64) (storage.KeyValue, error) {
	kv, _, err := s.store.Get(ctx, s.keys.object(r, namespace, name), revision)
	if err != nil {
		return kv, s.readError(r, name, err)
	}
	return kv, nil
}

func revisionString(rev int64) string { return strconv.FormatInt(rev, 10) }

func parseRevision(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %q", rv))
	}
	return n, nil
}

func nowTime(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }

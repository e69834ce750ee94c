package objects

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/storage/codec"
	"github.com/lapis-dev/lapis/internal/watchcache"
)

// UseWatchCache makes the service serve watches, and the reads that allow it, from memory.
func (s *Service) UseWatchCache(c *watchcache.Caches) { s.caches = c }

// freshnessTimeout is how long a read waits for the cache to reach the revision it needs before
// answering 504 "Too large resource version", as kube-apiserver does (3s there).
const freshnessTimeout = 3 * time.Second

// consistentReadWait is how long a consistent read waits for the cache before going to storage.
const consistentReadWait = 250 * time.Millisecond

func (s *Service) cacheOf(r *catalog.Resource) *watchcache.Cache {
	prefix := s.keys.resource(r)
	return s.caches.For(prefix, func(key string) (string, string) { return namespaceAndName(r, prefix, key) })
}

// freshCache returns r's cache once it reflects what resourceVersion rv asks for: "" the most
// recent state (a consistent read), "0" any state, N at least revision N.
func (s *Service) freshCache(ctx context.Context, r *catalog.Resource, rv string) (*watchcache.Cache, error) {
	c := s.cacheOf(r)
	var want int64
	timeout := freshnessTimeout
	switch rv {
	case "0":
	case "":
		current, err := s.store.Revision(ctx)
		if err != nil {
			return nil, storageError(r, "", err)
		}
		want = current
		// Storage can always answer a consistent read: do not wait long for the cache.
		timeout = consistentReadWait
	default:
		n, err := parseRevision(rv)
		if err != nil {
			return nil, err
		}
		want = n
	}
	if err := c.WaitFresh(ctx, want, timeout); err != nil {
		if !errors.Is(err, watchcache.ErrNotFresh) {
			return nil, storageError(r, "", err)
		}
		// The cache is behind. If storage has the revision, storage answers instead.
		if current, serr := s.store.Revision(ctx); serr == nil && current >= want {
			return nil, errUseStorage
		}
		return nil, tooLargeResourceVersion(want, c.Revision(), 1)
	}
	return c, nil
}

// errUseStorage says a read the cache would serve must go to storage (the cache lags).
var errUseStorage = errors.New("watch cache lags storage")

// tooLargeResourceVersion is kube-apiserver's 504 for a revision storage has not reached
// (NewTooLargeResourceVersionError in k8s.io/apiserver/pkg/storage).
func tooLargeResourceVersion(want, current int64, retrySeconds int) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", want, current), retrySeconds)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

// rawFromEntry returns the JSON served at r's version for a cached object, reported at revision
// rev (its own revision, or a deletion's).
func (s *Service) rawFromEntry(r *catalog.Resource, e *watchcache.Entry, rev int64) ([]byte, error) {
	if rev == e.ModRevision && r.Conversion == nil && !r.DefaultsOnRead && codec.HasAPIVersion(e.Value, r.GroupVersion.String()) {
		return e.Value, nil
	}
	obj, err := s.objectFromEntry(r, e)
	if err != nil {
		return nil, err
	}
	obj.SetResourceVersion(revisionString(rev))
	return obj.MarshalJSON()
}

func (s *Service) objectFromEntry(r *catalog.Resource, e *watchcache.Entry) (*unstructured.Unstructured, error) {
	if e.Corrupt != nil {
		return nil, e.Corrupt
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(e.Value); err != nil {
		return nil, fmt.Errorf("decoding cached object: %w", err)
	}
	return s.present(r, obj)
}

// matchesEntry applies a list or watch filter to a cached object.
func (s *Service) matchesEntry(r *catalog.Resource, f *filter, e *watchcache.Entry) bool {
	if f.everything() {
		return true
	}
	if !f.labels.Matches(e.Labels) {
		return false
	}
	var obj *unstructured.Unstructured
	if f.needsFields {
		var err error
		if obj, err = s.objectFromEntry(r, e); err != nil {
			return false
		}
	}
	return f.fields.Matches(f.fieldSet(obj, e.Namespace, e.Name))
}

// servesFromCache reports whether a list with opts may be answered from memory: everything but
// paged reads of the most recent or an exact state, which storage serves at one revision.
func (s *Service) servesFromCache(opts *ListOptions) bool {
	if s.caches == nil || opts.Continue != "" || opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
		return false
	}
	// A page at a resourceVersion is exact unless the client asked for NotOlderThan, which kube
	// serves from its cache too.
	return opts.Limit <= 0 || opts.ResourceVersion == "0" || opts.ResourceVersionMatch == metav1.ResourceVersionMatchNotOlderThan
}

// listCached answers a list from the cache, emitting each selected object.
func (s *Service) listCached(ctx context.Context, r *catalog.Resource, namespace string, opts ListOptions, f *filter,
	emit func(e *watchcache.Entry) error, meta *RawList) error {
	c, err := s.freshCache(ctx, r, opts.ResourceVersion)
	if err != nil {
		return err
	}
	prefix := s.keys.list(r, namespace)
	entries, rev := c.List(prefix)
	var taken int64
	var corrupt corruptObjects
	for i, e := range entries {
		if corrupt.add(e.KeyValue) {
			if corrupt.full() {
				break
			}
			continue
		}
		if !s.matchesEntry(r, f, e) {
			continue
		}
		if err := emit(e); err != nil {
			return apierrors.NewInternalError(err)
		}
		taken++
		if opts.Limit > 0 && taken == opts.Limit && i < len(entries)-1 {
			// The rest comes from storage at this revision (continue tokens are exact).
			meta.Continue = encodeContinue(rev, e.Key[len(prefix):])
			if f.everything() {
				remaining := int64(len(entries) - 1 - i)
				meta.RemainingItemCount = &remaining
			}
			break
		}
	}
	meta.ResourceVersion = revisionString(rev)
	return corrupt.err(r)
}

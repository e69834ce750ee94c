package objects

import (
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// typedOf returns r's TypedBehavior, if its objects have Go types.
func typedOf(r *catalog.Resource) (catalog.TypedBehavior, bool) {
	return r.TypedBehavior, r.TypedBehavior != nil
}

// typedWrite carries an update's Go objects between the steps of one request.
type typedWrite struct {
	// merged is DefaultTyped's object for the mutation's result (a server-side apply's merge),
	// set by the mutation.
	merged runtime.Object
}

// defaulterFunc is a runtime.ObjectDefaulter.
type defaulterFunc func(obj runtime.Object)

func (f defaulterFunc) Default(obj runtime.Object) { f(obj) }

// maxWritten bounds the objects lastWrites keeps: enough for the objects written often (a
// benchmark's 16 clients, controllers' Leases), a few MB at most.
const maxWritten = 64

// lastWrites keeps the objects the service wrote last, each as it is stored at its revision,
// with its Go object: the next update of the object (read from storage at that revision, so
// known to be the same) starts from them instead of decoding the stored JSON and converting it
// to its Go type. An object at a revision never changes, so an entry is never stale; entries
// are dropped when there are too many.
type lastWrites struct {
	mu      sync.Mutex
	entries map[writtenKey]written
}

type writtenKey struct {
	r   *catalog.Resource // the version the object is served at
	key string
}

type written struct {
	rev   int64
	obj   *unstructured.Unstructured // never changed once kept
	typed runtime.Object             // never changed once kept
}

// get returns the object kept for key at rev, which the caller must not change, and a private
// copy of its Go object; or nils.
func (l *lastWrites) get(r *catalog.Resource, key string, rev int64) (*unstructured.Unstructured, runtime.Object) {
	l.mu.Lock()
	w, ok := l.entries[writtenKey{r, key}]
	l.mu.Unlock()
	if !ok || w.rev != rev {
		return nil, nil
	}
	return w.obj, w.typed.DeepCopyObject()
}

// put keeps obj (stored at rev) and its Go object, which the caller gives away.
func (l *lastWrites) put(r *catalog.Resource, key string, rev int64, obj *unstructured.Unstructured, typed runtime.Object) {
	accessor, err := meta.Accessor(typed)
	if err != nil {
		return
	}
	accessor.SetResourceVersion(strconv.FormatInt(rev, 10))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.entries == nil {
		l.entries = map[writtenKey]written{}
	}
	k := writtenKey{r, key}
	if _, ok := l.entries[k]; !ok && len(l.entries) >= maxWritten {
		for other := range l.entries { // any one: a full cache is one a write usually misses
			delete(l.entries, other)
			break
		}
	}
	l.entries[k] = written{rev: rev, obj: obj, typed: typed}
}

// forget drops what is kept for key (its object is deleted).
func (l *lastWrites) forget(r *catalog.Resource, key string) {
	l.mu.Lock()
	delete(l.entries, writtenKey{r, key})
	l.mu.Unlock()
}

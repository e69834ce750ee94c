package objects

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/storage"
	"github.com/lapis-dev/lapis/internal/watchcache"
)

// ListOptions are a list's query parameters, selectors already parsed.
type ListOptions = metainternalversion.ListOptions

// Memo keeps an object's other encodings (Protobuf, say) for as long as it is unchanged.
type Memo interface {
	Encoded(key string, encode func() ([]byte, error)) ([]byte, error)
}

// RawList is one page of a list, each item the JSON served for it.
type RawList struct {
	Items [][]byte
	// Memos, when not nil, holds for each item whose JSON is the cached object's as it is a
	// memo of the object's other encodings (nil for the others).
	Memos              []Memo
	ResourceVersion    string
	Continue           string
	RemainingItemCount *int64
}

// continueToken is kube-apiserver's continue format: the revision of the first page and the key
// to start at ("/" + the key relative to the list's prefix, inclusive).
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

// encodeContinue makes the token of a list that continues after the object at relativeKey.
func encodeContinue(rev int64, relativeKey string) string {
	b, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", ResourceVersion: rev, StartKey: "/" + relativeKey + "\x00"})
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeContinue checks a token as kube-apiserver does and returns its revision and the
// relative key to start at. Tokens are not signed there either: what matters is that a token
// cannot reach outside the list's prefix.
func decodeContinue(token string) (rev int64, start string, err error) {
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, "", fmt.Errorf("continue key is not valid: %v", err)
	}
	var c continueToken
	if err := json.Unmarshal(data, &c); err != nil {
		return 0, "", fmt.Errorf("continue key is not valid: %v", err)
	}
	if c.APIVersion != "meta.k8s.io/v1" {
		return 0, "", fmt.Errorf("continue key is not valid: server does not recognize this encoded version %q", c.APIVersion)
	}
	if c.ResourceVersion == 0 {
		return 0, "", errors.New("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	}
	if len(c.StartKey) == 0 {
		return 0, "", errors.New("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")
	}
	// path.Clean keeps the key inside the list's prefix (no "..", no absolute escape).
	if cleaned := path.Clean(c.StartKey); cleaned != c.StartKey || !strings.HasPrefix(cleaned, "/") {
		return 0, "", fmt.Errorf("continue key is not valid: %s", c.StartKey)
	}
	return c.ResourceVersion, c.StartKey[1:], nil
}

// filter decides whether a stored object belongs in a list or watch.
type filter struct {
	r           *catalog.Resource
	prefix      string // r's keys' prefix
	labels      labels.Selector
	fields      fields.Selector
	needsBody   bool // false when the key alone (namespace, name) decides
	needsFields bool // true when a field beyond metadata.name and metadata.namespace is selected
}

func (s *Service) newFilter(r *catalog.Resource, opts *ListOptions) (*filter, error) {
	f := &filter{r: r, prefix: s.keys.resource(r), labels: labels.Everything(), fields: fields.Everything()}
	if opts.LabelSelector != nil {
		f.labels = opts.LabelSelector
	}
	if opts.FieldSelector != nil {
		f.fields = opts.FieldSelector
	}
	f.needsBody = !f.labels.Empty()
	if f.fields.Empty() {
		return f, nil // asking the type for its selectable fields costs a conversion
	}
	supported := map[string]bool{"metadata.name": true, "metadata.namespace": true}
	extra := r.Behavior.SelectableFields(&unstructured.Unstructured{Object: map[string]any{}})
	for k := range extra {
		supported[k] = true
	}
	if r.FieldLabel != nil {
		// kube's field-label conversion decides, with its own messages, and may rename a label
		// to the field it stands for (an events.k8s.io event's regarding.name).
		converted, err := f.fields.Transform(r.FieldLabel)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		f.fields = converted
	}
	for _, req := range f.fields.Requirements() {
		if !supported[req.Field] {
			if len(extra) == 0 {
				// Types with no field-label conversion get kube's generic message.
				return nil, apierrors.NewBadRequest(fmt.Sprintf(`%q is not a known field selector: only "metadata.name", "metadata.namespace"`, req.Field))
			}
			return nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
		}
		if req.Field != "metadata.name" && req.Field != "metadata.namespace" {
			f.needsBody, f.needsFields = true, true
		}
	}
	return f, nil
}

func (f *filter) everything() bool { return f.labels.Empty() && f.fields.Empty() }

func (f *filter) fieldSet(obj *unstructured.Unstructured, namespace, name string) fields.Set {
	set := fields.Set{"metadata.name": name}
	if f.r.Namespaced {
		set["metadata.namespace"] = namespace
	}
	if obj != nil {
		for k, v := range f.r.Behavior.SelectableFields(obj) {
			set[k] = v
		}
	}
	return set
}

// matches reports whether the object stored at kv passes; obj may be nil when !needsBody.
func (f *filter) matches(key string, obj *unstructured.Unstructured) bool {
	namespace, name := namespaceAndName(f.r, f.prefix, key)
	if obj != nil && !f.labels.Matches(labels.Set(obj.GetLabels())) {
		return false
	}
	return f.fields.Matches(f.fieldSet(obj, namespace, name))
}

// ListRaw reads a page of objects in namespace ("" for all namespaces).
func (s *Service) ListRaw(ctx context.Context, r *catalog.Resource, namespace string, opts ListOptions) (RawList, error) {
	var out RawList
	if s.servesFromCache(&opts) {
		f, err := s.newFilter(r, &opts)
		if err != nil {
			return out, err
		}
		err = s.listCached(ctx, r, namespace, opts, f, func(e *watchcache.Entry) error {
			raw, err := s.rawFromEntry(r, e, e.ModRevision)
			var m Memo
			if len(raw) > 0 && len(e.Value) > 0 && &raw[0] == &e.Value[0] { // served as cached
				m = e
			}
			out.Items, out.Memos = append(out.Items, raw), append(out.Memos, m)
			return err
		}, &out)
		if !errors.Is(err, errUseStorage) {
			return out, err
		}
		out = RawList{}
	}
	err := s.list(ctx, r, namespace, opts, func(kv storage.KeyValue, obj *unstructured.Unstructured) error {
		var raw []byte
		var err error
		if obj != nil {
			raw, err = obj.MarshalJSON()
		} else {
			raw, err = s.rawFromStorage(r, kv)
		}
		out.Items = append(out.Items, raw)
		return err
	}, &out)
	return out, err
}

// List reads every object selected by opts (limit and continue apply) as decoded objects.
func (s *Service) List(ctx context.Context, r *catalog.Resource, namespace string, opts ListOptions) ([]*unstructured.Unstructured, RawList, error) {
	var items []*unstructured.Unstructured
	var meta RawList
	if s.servesFromCache(&opts) {
		f, err := s.newFilter(r, &opts)
		if err != nil {
			return nil, meta, err
		}
		err = s.listCached(ctx, r, namespace, opts, f, func(e *watchcache.Entry) error {
			obj, err := s.objectFromEntry(r, e)
			if err != nil {
				return err
			}
			items = append(items, obj)
			return nil
		}, &meta)
		if !errors.Is(err, errUseStorage) {
			return items, meta, err
		}
		items, meta = nil, RawList{}
	}
	err := s.list(ctx, r, namespace, opts, func(kv storage.KeyValue, obj *unstructured.Unstructured) error {
		if obj == nil {
			var err error
			if obj, err = s.fromStorage(r, kv); err != nil {
				return err
			}
		}
		items = append(items, obj)
		return nil
	}, &meta)
	return items, meta, err
}

func (s *Service) list(ctx context.Context, r *catalog.Resource, namespace string, opts ListOptions,
	emit func(storage.KeyValue, *unstructured.Unstructured) error, meta *RawList) error {
	f, err := s.newFilter(r, &opts)
	if err != nil {
		return err
	}
	prefix := s.keys.list(r, namespace)
	var rev int64
	var start, after string // a continue token's start (inclusive); then the last key read
	if opts.Continue != "" && opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		return apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
	}
	if opts.Continue != "" {
		tokenRev, startKey, err := decodeContinue(opts.Continue)
		if err != nil {
			return apierrors.NewBadRequest("invalid continue token: " + err.Error())
		}
		rev, start = tokenRev, prefix+startKey
	} else if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact ||
		(opts.Limit > 0 && opts.ResourceVersion != "0" && opts.ResourceVersionMatch == "") {
		// Exact, asked for or implied by a paged list at a given resourceVersion.
		if rev, err = parseRevision(opts.ResourceVersion); err != nil {
			return err
		}
	}
	limit := opts.Limit
	if limit < 0 {
		limit = 0
	}
	var taken int64
	var corrupt corruptObjects
	for {
		page, err := s.store.List(ctx, prefix, storage.ListOptions{Revision: rev, Limit: limit, Start: start, After: after})
		if errors.Is(err, storage.ErrFutureRevision) {
			// kube-apiserver reads these lists from etcd and answers at once, with no Retry-After.
			current, cerr := s.store.Revision(ctx)
			if cerr != nil {
				return storageError(r, "", cerr)
			}
			return tooLargeResourceVersion(rev, current, 0)
		}
		if err != nil {
			if opts.Continue != "" && isCompacted(err) {
				return s.expiredContinue(ctx, opts.Continue)
			}
			return storageError(r, "", err)
		}
		rev = page.Revision
		for i, kv := range page.Items {
			if corrupt.add(kv) {
				if after = kv.Key; corrupt.full() {
					return corrupt.err(r)
				}
				continue
			}
			var obj *unstructured.Unstructured
			if f.needsBody {
				if obj, err = s.fromStorage(r, kv); err != nil {
					return apierrors.NewInternalError(err)
				}
			}
			after = kv.Key
			if !f.everything() && !f.matches(kv.Key, obj) {
				continue
			}
			if err := emit(kv, obj); err != nil {
				return apierrors.NewInternalError(err)
			}
			taken++
			if limit > 0 && taken == limit {
				more := page.More || i < len(page.Items)-1
				if more {
					meta.Continue = encodeContinue(rev, strings.TrimPrefix(kv.Key, prefix))
					if f.everything() {
						remaining := page.Remaining + int64(len(page.Items)-1-i)
						meta.RemainingItemCount = &remaining
					}
				}
				meta.ResourceVersion = revisionString(rev)
				return corrupt.err(r)
			}
		}
		if !page.More {
			meta.ResourceVersion = revisionString(rev)
			return corrupt.err(r)
		}
	}
}

func isCompacted(err error) bool { return errors.Is(err, storage.ErrCompacted) }

// expiredContinue is kube-apiserver's 410 for a continue token whose revision is compacted: it
// offers a token that continues from the same key at the newest revision.
func (s *Service) expiredContinue(ctx context.Context, token string) error {
	err := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. " +
		"Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.")
	_, start, derr := decodeContinue(token)
	if rev, rerr := s.store.Revision(ctx); rerr == nil && derr == nil {
		b, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", ResourceVersion: rev, StartKey: "/" + start})
		err.ErrStatus.ListMeta.Continue = base64.RawURLEncoding.EncodeToString(b)
	}
	return err
}

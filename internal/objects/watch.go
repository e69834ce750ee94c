package objects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/storage"
)

// WatchEvent is one event of a watch, its object already encoded as JSON.
type WatchEvent struct {
	Type   watch.EventType
	Object json.RawMessage
}

// Watch streams changes to the objects opts selects in namespace ("" for all). With no
// resourceVersion (or "0") it starts with an ADDED event for each current object.
func (s *Service) Watch(ctx context.Context, r *catalog.Resource, namespace string, opts ListOptions) (<-chan WatchEvent, error) {
	f, err := newFilter(r, &opts)
	if err != nil {
		return nil, err
	}
	out := make(chan WatchEvent, 64)
	var initial [][]byte
	start, err := parseRevision(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if start == 0 {
		list, err := s.ListRaw(ctx, r, namespace, ListOptions{LabelSelector: opts.LabelSelector, FieldSelector: opts.FieldSelector})
		if err != nil {
			return nil, err
		}
		initial = list.Items
		start, _ = parseRevision(list.ResourceVersion)
	}
	events, errc := s.store.Watch(ctx, listPrefix(r, namespace), start)
	go func() {
		defer close(out)
		send := func(ev WatchEvent) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for _, raw := range initial {
			if !send(WatchEvent{Type: watch.Added, Object: raw}) {
				return
			}
		}
		for batch := range events {
			for _, ev := range batch {
				we, ok, err := s.watchEvent(r, f, ev)
				if err != nil {
					send(errorEvent(apierrors.NewInternalError(err)))
					return
				}
				if ok && !send(we) {
					return
				}
			}
		}
		select {
		case err := <-errc:
			if errors.Is(err, storage.ErrCompacted) {
				send(errorEvent(apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d", start))))
			}
		default:
		}
	}()
	return out, nil
}

// watchEvent translates a storage change into what a watcher with filter f sees: an object
// moving out of the selection is a DELETED event, moving in an ADDED one.
func (s *Service) watchEvent(r *catalog.Resource, f *filter, ev storage.Event) (WatchEvent, bool, error) {
	decode := func(kv storage.KeyValue) (*unstructured.Unstructured, error) {
		if kv.Value == nil {
			return nil, nil
		}
		return s.fromStorage(r, kv)
	}
	cur, err := decode(ev.KV)
	if err != nil {
		return WatchEvent{}, false, err
	}
	prev, err := decode(ev.Previous)
	if err != nil {
		return WatchEvent{}, false, err
	}
	matches := func(obj *unstructured.Unstructured, key string) bool {
		return obj != nil && (f.everything() || f.matches(key, obj))
	}
	var typ watch.EventType
	obj := cur
	switch {
	case ev.Type == storage.Deleted:
		if !matches(prev, ev.Previous.Key) {
			return WatchEvent{}, false, nil
		}
		typ, obj = watch.Deleted, prev
		// A deleted object is reported at the revision of its deletion, as kube-apiserver does.
		obj.SetResourceVersion(revisionString(ev.KV.ModRevision))
	case matches(cur, ev.KV.Key) && matches(prev, ev.Previous.Key):
		typ = watch.Modified
	case matches(cur, ev.KV.Key):
		typ = watch.Added
	case matches(prev, ev.Previous.Key):
		typ = watch.Deleted
		obj = cur // the object as it is now, no longer selected
	default:
		return WatchEvent{}, false, nil
	}
	raw, err := obj.MarshalJSON()
	if err != nil {
		return WatchEvent{}, false, err
	}
	return WatchEvent{Type: typ, Object: raw}, true, nil
}

func errorEvent(err *apierrors.StatusError) WatchEvent {
	status := err.Status()
	status.Kind, status.APIVersion = "Status", "v1"
	raw, _ := json.Marshal(status)
	return WatchEvent{Type: watch.Error, Object: raw}
}

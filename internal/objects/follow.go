package objects

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// Follow lists every object of r, calls handle for each, then calls handle for every change
// until ctx ends (deleted objects come with deleted true). When the watch breaks (compaction,
// storage trouble) it lists again, so handle sees every object's latest state. It is how lapis's
// own controllers keep up with storage.
func (s *Service) Follow(ctx context.Context, r *catalog.Resource, handle func(obj *unstructured.Unstructured, deleted bool)) {
	for ctx.Err() == nil {
		items, meta, err := s.List(ctx, r, "", ListOptions{})
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for _, item := range items {
			handle(item, false)
		}
		events, err := s.Watch(ctx, r, "", ListOptions{ResourceVersion: meta.ResourceVersion})
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for ev := range events {
			if ev.Type == watch.Error {
				break
			}
			obj := &unstructured.Unstructured{}
			if err := obj.UnmarshalJSON(ev.Object); err != nil {
				continue
			}
			handle(obj, ev.Type == watch.Deleted)
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

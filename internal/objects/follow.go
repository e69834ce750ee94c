package objects

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	kjson "sigs.k8s.io/json"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// Follow lists every object of r, calls handle for each, then calls handle for every change
// until ctx ends (deleted objects come with deleted true). When the watch breaks (compaction,
// storage trouble) it lists again, so handle sees every object's latest state. It is how lapis's
// own controllers keep up with storage.
func (s *Service) Follow(ctx context.Context, r *catalog.Resource, handle func(obj *unstructured.Unstructured, deleted bool)) {
	s.follow(ctx, r, handle, func(raw []byte) (*unstructured.Unstructured, error) {
		obj := &unstructured.Unstructured{}
		return obj, obj.UnmarshalJSON(raw)
	})
}

// FollowMetadata is Follow for handlers that read only metadata: changed objects come with
// their apiVersion, kind and metadata alone, which spares decoding the rest.
func (s *Service) FollowMetadata(ctx context.Context, r *catalog.Resource, handle func(obj *unstructured.Unstructured, deleted bool)) {
	s.follow(ctx, r, handle, func(raw []byte) (*unstructured.Unstructured, error) {
		var partial struct {
			APIVersion string         `json:"apiVersion"`
			Kind       string         `json:"kind"`
			Metadata   map[string]any `json:"metadata"`
		}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &partial); err != nil {
			return nil, err
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": partial.APIVersion, "kind": partial.Kind, "metadata": partial.Metadata}}, nil
	})
}

func (s *Service) follow(ctx context.Context, r *catalog.Resource, handle func(obj *unstructured.Unstructured, deleted bool), decode func([]byte) (*unstructured.Unstructured, error)) {
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
			obj, err := decode(ev.Object)
			if err != nil {
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

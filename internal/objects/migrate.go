package objects

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/storage"
)

// migratePage is how many keys one read of an old prefix returns.
const migratePage = 500

// oldPrefix is where lapis before kube's key layout kept a built-in resource's objects:
// [group/]resource/ below the etcd prefix.
func (k Keys) oldPrefix(gr schema.GroupResource) string {
	if gr.Group == "" {
		return k.root + gr.Resource + "/"
	}
	return k.root + gr.Group + "/" + gr.Resource + "/"
}

// MigrateKeys moves the objects of the built-in resources among rs that an older lapis kept
// under its own keys to kube's keys, one transaction each (see storage.Store.Move): run it at
// start before anything reads objects; a start cut short is finished by the next. An object
// whose new key is taken is left where it is, and logged. Only keys below keys' prefix move.
func MigrateKeys(ctx context.Context, store *storage.Store, keys Keys, rs []*catalog.Resource, log *slog.Logger) error {
	done := map[schema.GroupResource]bool{}
	for _, r := range rs {
		gr := r.StorageGroupResource
		if r.CRD != nil || done[gr] || keys.oldPrefix(gr) == keys.resource(r) {
			continue
		}
		done[gr] = true
		moved, kept, err := migrateResource(ctx, store, keys, r)
		if err != nil {
			return fmt.Errorf("moving %s to kube's etcd keys: %w", gr, err)
		}
		if moved > 0 || kept > 0 {
			log.Info("moved objects to kube's etcd keys", "resource", gr.String(), "moved", moved,
				"from", keys.oldPrefix(gr), "to", keys.resource(r), "leftBecauseNewKeyTaken", kept)
		}
	}
	return nil
}

// migrateResource moves r's objects from its old prefix, page by page.
func migrateResource(ctx context.Context, store *storage.Store, keys Keys, r *catalog.Resource) (moved, kept int, err error) {
	from, to := keys.oldPrefix(r.StorageGroupResource), keys.resource(r)
	after := ""
	for {
		page, err := store.List(ctx, from, storage.ListOptions{Limit: migratePage, After: after})
		if err != nil {
			return moved, kept, err
		}
		for _, kv := range page.Items {
			after = kv.Key
			rest := strings.TrimPrefix(kv.Key, from)
			if !isOldLayout(r, rest) {
				continue // another resource's key under this prefix (services/specs/...)
			}
			_, err := store.Move(ctx, kv.Key, to+rest, kv.Value, kv.ModRevision)
			switch {
			case err == nil:
				moved++
			case errors.Is(err, storage.ErrExists):
				kept++
			case errors.Is(err, storage.ErrConflict):
				// Changed since listed (another lapis on this etcd): the next start looks again.
			default:
				return moved, kept, err
			}
		}
		if !page.More {
			return moved, kept, nil
		}
	}
}

// isOldLayout tells whether rest, a key below r's old prefix, names one object of r:
// namespace/name or name. The old prefix of services holds kube's services/specs/ns/name and
// services/endpoints/ns/name too, which have one segment more.
func isOldLayout(r *catalog.Resource, rest string) bool {
	segments := strings.Split(rest, "/")
	want := 1
	if r.Namespaced {
		want = 2
	}
	if len(segments) != want {
		return false
	}
	for _, s := range segments {
		if s == "" {
			return false
		}
	}
	return true
}

package builtin

import (
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// Resources returns the built-in resources in discovery order.
func Resources() []*catalog.Resource {
	return []*catalog.Resource{
		namespaces(),
		configMaps(),
		secrets(),
		serviceAccounts(),
		coreEvents(),
		eventsV1Events(),
		leases(),
		customResourceDefinitions(),
	}
}

var (
	coreV1 = schema.GroupVersion{Version: "v1"}
	// eventsStorage is where both event APIs keep their objects, as core/v1 events.
	eventsStorage = schema.GroupResource{Resource: "events"}
)

// sortedKeys makes map-driven validation report errors in a stable order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

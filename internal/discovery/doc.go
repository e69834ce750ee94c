// Package discovery serves the API discovery documents kube-apiserver serves, derived from the
// resource catalogue: /api (APIVersions), /api/v1 and /apis/GROUP/VERSION (APIResourceList),
// /apis (APIGroupList) and /apis/GROUP (APIGroup), plus the aggregated form of /api and /apis
// (apidiscovery.k8s.io APIGroupDiscoveryList, v2 and v2beta1) that clients ask for first through
// the Accept header. Documents are built once per catalogue revision and served from memory.
package discovery

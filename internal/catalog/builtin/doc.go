// Package builtin owns the built-in resources lapis serves without a CRD: core/v1 namespaces,
// configmaps, secrets, serviceaccounts and events, events.k8s.io/v1 events (stored as core/v1
// events, as kube does), coordination.k8s.io/v1 leases and apiextensions.k8s.io/v1
// customresourcedefinitions. For each it declares the discovery names and the type's strategy:
// server defaults, what create and update reset, type-specific validation and selectable fields,
// following kube-apiserver's strategies and validation for the same types.
package builtin

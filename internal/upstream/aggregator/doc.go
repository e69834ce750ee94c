// Package aggregator is kube-aggregator's code that kube keeps in the package of the
// aggregator's generic server (k8s.io/kube-aggregator v0.37.2 pkg/apiserver) or in
// kube-apiserver's command (k8s.io/kubernetes v1.37.2): the proxy to an extension API server
// (handler_proxy.go), the discovery manager that merges their discovery documents
// (handler_discovery.go), the APIService registration controller (apiservice_controller.go),
// the Service resolvers (resolvers.go) and the local APIServices' priorities (priorities.go).
// Each file's header names its origin and lists the local changes. internal/aggregator wires
// them to lapis's serving.
package aggregator

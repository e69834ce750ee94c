// Package server assembles lapis and serves it: it opens storage (while it builds what needs
// none: the resource catalogue, TLS, authentication and authorization), starts lapis's own
// controllers (CRDs on every replica; namespaces, garbage
// collection, compaction and the rest of kube-controller-manager's work on the replica holding
// the controllers' Lease, internal/leader), keeps its APIServerIdentity Lease, listens with TLS
// (its own certificate, --tls-cert-file's or --cert-dir's; its loopback client gets one of its
// own by SNI, tls.go), builds the admission chain once its loopback informers have synced
// (writes wait for it meanwhile, gate.go), puts kube's RBAC bootstrap policy in place (a first
// start creates it through the objects service rather than the loopback, rbacwrites.go), writes
// the admin kubeconfig while it serves, and runs every request through the same chain: tracked
// for shutdown (drain.go) → audit ID → request info → request log (-v=3) → deadline →
// authenticate → audit (internal/audit) → impersonate → in-flight limit → authorize → count
// (internal/metrics) → route (health, /metrics, discovery, OpenAPI, or a resource verb).
package server

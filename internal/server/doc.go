// Package server assembles lapis and serves it. Start runs in named phases (start.go), each
// pushing what it starts on one cleanup stack that a failed start and Shutdown undo, last first
// (cleanup.go): storage (the data directory, locked; the credentials; etcd opening meanwhile),
// identity (audit, the listener, TLS with its own certificate, --tls-cert-file's or --cert-dir's,
// the loopback client with one of its own by SNI, tls.go; authentication and authorization),
// objects (the resource catalogue over storage, the system namespaces), controllers (allocation,
// CRDs, FlowSchema status, kube-root-ca.crt), serving, post-start (the admission chain, built
// once its loopback informers have synced, writes waiting for it meanwhile, gate.go; kube's
// RBAC bootstrap policy, which a first start creates through the objects service rather than
// the loopback, rbacwrites.go; the kubernetes Service; and, on the replica holding the
// controllers' Lease, internal/leader, namespace deletion, garbage collection, compaction and
// the rest of kube-controller-manager's work) and ready (the identity Lease kept, the admin
// kubeconfig written). kube-apiserver's post-start hooks that this work stands for are named as
// kube's (hooks.go): /healthz, /livez and /readyz list them as kube does (health.go).
//
// Every request goes through the same chain: tracked for shutdown (drain.go) → audit ID →
// request info → request log (-v=3) → deadline → authenticate → audit (internal/audit) →
// impersonate → in-flight limit → authorize → count (internal/metrics) → route (health,
// /metrics, discovery, OpenAPI, or a resource verb).
package server

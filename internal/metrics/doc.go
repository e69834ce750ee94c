// Package metrics owns lapis's /metrics: kube-apiserver's metric families, with kube's names,
// labels, buckets and stability levels (component-base/metrics), kept in a registry of each
// Server's own so that several servers in one process do not add up. It records every request
// (a filter computing the verb, scope and code as kube's endpoints/metrics does), etcd requests
// (an observer the storage backend calls), watches (a hook the watch handler calls) and stored
// object counts (read from the watch caches at scrape time). /metrics also serves what kube's
// libraries register in component-base's process-wide legacyregistry: Go and process metrics,
// authentication, authorization and admission metrics.
package metrics

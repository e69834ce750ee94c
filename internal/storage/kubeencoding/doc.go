// Package kubeencoding reads every value kube-apiserver writes into etcd — Protobuf in its
// `k8s\x00` envelope for built-in types, JSON for custom resources and for built-in types under
// `--storage-media-type application/json` — and turns it, once, as it leaves etcd, into lapis's
// stored form (see storage/codec): JSON at the resource's storage version that lapis serves by
// splicing bytes. Writes are stored as `--storage-media-type` says.
//
// Values already in lapis's form pass through untouched, checked by their first bytes, so the
// cost falls only on what kube-apiserver (or a lapis writing Protobuf) wrote. Values written at
// another version than the storage version (by an older kube-apiserver) are defaulted and
// converted through kube's scheme, as kube-apiserver's storage decoder does.
package kubeencoding

// Package clientgo drives lapis with client-go the way controllers do: shared informers
// (including the WatchList path, protobuf and metadata-only informers), raw watches and paged
// lists, asserting the outcomes kube-apiserver produces for the same requests.
package clientgo

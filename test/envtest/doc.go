// Package envtest runs an unmodified controller-runtime project's envtest suite against lapis:
// `lapis envtest-assets DIR` makes DIR/kube-apiserver, DIR/etcd and DIR/kubectl (all the lapis
// binary), and the project under testdata/project (its own module: a CRD, a reconciler, a
// mutating and a validating webhook served by envtest's webhook server) runs `go test ./...`
// with KUBEBUILDER_ASSETS=DIR. It also checks what envtest reads from the binaries before
// starting them (`kube-apiserver --help`, `etcd --help`).
//
// The lapis binary comes from internal/testkit/lapisproc ($LAPIS_BIN, or ./cmd/lapis built once).
// KUBEBUILDER_ASSETS set to a directory with kube's binaries instead (LAPIS_ENVTEST_ASSETS)
// runs the same project against them, for comparison.
package envtest

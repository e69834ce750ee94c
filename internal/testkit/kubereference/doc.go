// Package kubereference starts and stops kube-apiserver 1.37 for differential tests, through
// ../shared/reference/kube-reference beside the repository, which builds it once (about 15
// minutes) into ~/.cache/kube-reference/<version> or $KUBE_REFERENCE_BIN. Tests never build it:
// Built says whether it is there, and why not.
//
// Start runs the script, which starts its own etcd (wiped at every start). StartServer runs the
// built kube-apiserver itself on an etcd the caller keeps, with certificates made in Go
// (EnsurePKI), so that a test can stop it and start it again, or start another server, on the
// same data.
package kubereference

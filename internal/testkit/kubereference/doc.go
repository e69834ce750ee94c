// Package kubereference starts and stops kube-apiserver 1.37 for differential tests, through
// ../shared/reference/kube-reference beside the repository, which builds it once (about 15
// minutes) into ~/.cache/kube-reference/<version> or $KUBE_REFERENCE_BIN. Tests never build it:
// Built says whether it is there, and why not.
package kubereference

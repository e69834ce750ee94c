// Package namespace runs namespace deletion as kube's namespace controller does: once a
// namespace is Terminating it deletes everything in it, built-in and custom, then removes the
// "kubernetes" finalizer so the namespace itself goes.
package namespace

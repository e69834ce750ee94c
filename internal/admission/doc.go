// Package admission is kube-apiserver's admission chain for built-in objects: kube's own
// plugins (plugin/pkg/admission/*), registered and initialized as kube-apiserver does it, with
// informers over a loopback client. ResourceQuota gets kube-apiserver's quota configuration
// (kube's evaluators); the quota status it checks is kept by internal/controllers/quota.
// Admission webhooks and policies are not here yet.
//
// The chain works on objects at kube's internal version: the kube catalogue's behaviour calls it
// between field tracking and the strategy (mutating) and after validation (validating), the
// places kube-apiserver calls it.
package admission

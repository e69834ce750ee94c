// Package admission is kube-apiserver's admission chain: kube's own plugins
// (plugin/pkg/admission/*, and k8s.io/apiserver's webhook and policy plugins), registered,
// ordered and initialized as kube-apiserver does it, with informers over a loopback client.
// ResourceQuota gets kube-apiserver's quota configuration (kube's evaluators); the quota status
// it checks is kept by internal/controllers/quota.
//
// MutatingAdmissionWebhook and ValidatingAdmissionWebhook call `url` client configs directly;
// `service` references resolve to a ready endpoint of the Service's EndpointSlices (kube's
// endpoint routing: lapis runs no proxy), the kubernetes Service to lapis itself with the
// loopback's credentials; other webhooks get no credentials (kube-apiserver without an
// admission kubeconfig). ValidatingAdmissionPolicy and MutatingAdmissionPolicy are kube's CEL
// plugins (params through a dynamic client, kinds through discovery). RunPolicyStatus is
// kube-controller-manager's controller writing policies' status.typeChecking.
//
// The chain works on objects at kube's internal version (built-in types) or unstructured
// (custom resources): the catalogue calls it between field tracking and the strategy
// (mutating) and after validation (validating), the places kube-apiserver calls it.
package admission

// Package rootca publishes lapis's CA in every namespace, as kube-controller-manager's
// root-ca-certificate-publisher does: a ConfigMap "kube-root-ca.crt" whose data is exactly
// {ca.crt: <CA bundle>} and which carries kube's description annotation, created when the
// namespace appears (never in a Terminating one), created again when deleted and put back when
// its data changes.
//
// One difference from kube: lapis processes sharing one etcd may each have their own CA, and
// every one of them runs this publisher (it is not among the singleton work of
// internal/leader), so the bundle keeps, beside this lapis's CA, the CAs of the others that are
// already in it (self-signed CA certificates with the same subject); otherwise each would
// overwrite the other's forever, and clients of the others would not trust them.
package rootca

// Package certfixtures makes the certificate material differential tests put in their
// certificates.k8s.io fixtures, the same on every run (a fixed ed25519 seed), so that both
// servers are sent byte-identical requests.
package certfixtures

// Package auth owns the credentials lapis creates on first start: a CA, a serving certificate,
// an admin token and client certificate, all under the data directory. Who is asking
// (authn) and what they may do (authz) live in its subpackages.
package auth

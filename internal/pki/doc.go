// Package pki owns the credentials lapis creates on first start: a CA, a serving certificate,
// an admin token and client certificate, the embedded etcd's certificates and, unless it is
// given its own, the front proxy's request-header CA and client certificate, all under the data
// directory. Who is asking (auth/authn) and what they may do (auth/authz) live elsewhere.
package pki

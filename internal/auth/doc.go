// Package auth owns who may talk to lapis: the credentials it creates on first start (a CA, a
// serving certificate, an admin token and client certificate, all under the data directory),
// the authenticator that turns a request into a user, and the Authorizer interface the request
// path consults (today every authenticated user is allowed).
package auth

// Package routing reads what a request asks for: which resource, namespace, name and
// subresource a path names and which verb that makes (kube's RequestInfo), and which
// representation the client accepts (content negotiation).
package routing

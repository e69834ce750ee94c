// Package special serves kube's special endpoints, beside the verbs of package handlers: the
// resources and subresources kube-apiserver answers with its own REST code rather than by
// storing what it is sent (bindings and pods/binding, pods/eviction, serviceaccounts/token, the
// authentication and authorization reviews, componentstatuses). Each is a handlers.Endpoint;
// New makes the table the verbs' handler dispatches on, so this package imports handlers and
// never the other way round.
package special

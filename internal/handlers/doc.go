// Package handlers serves the resource verbs over HTTP: it decodes request bodies and query
// parameters, calls the objects pipeline, and encodes what comes back. It is the one place API
// errors become metav1.Status responses.
//
// kube's special endpoints (package special: bindings, evictions, TokenRequests, reviews,
// component statuses) are served beside the verbs: the server gives the handler their table
// (Endpoints), and each gets a Request with which it reads its body as kube's create handler
// does and answers as the verbs do.
package handlers

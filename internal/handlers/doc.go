// Package handlers serves the resource verbs over HTTP: it decodes request bodies and query
// parameters, calls the objects pipeline, and encodes what comes back. It is the one place API
// errors become metav1.Status responses.
package handlers

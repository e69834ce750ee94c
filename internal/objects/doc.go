// Package objects is the one path every read and write of an object takes, whether it comes
// from an HTTP request or from one of lapis's own controllers: decode-time normalization,
// metadata rules, defaulting, validation, then the store. It speaks in objects and API errors
// (k8s.io/apimachinery/pkg/api/errors values); turning them into HTTP responses is the
// handlers' job.
package objects

// Package openapi serves the OpenAPI documents of whatever the catalogue serves, as
// kube-apiserver does: one swagger 2.0 document at /openapi/v2 (JSON, or protobuf when asked),
// and at /openapi/v3 a discovery document naming one OpenAPI 3.0 document per group-version
// (/openapi/v3/api/v1, /openapi/v3/apis/GROUP/VERSION), each addressed with a hash of its content
// so that clients may cache it for good.
//
// The package owns the documents' content: the definitions of the built-in types (kube's own,
// k8s.io/kubernetes/pkg/generated/openapi), the schemas of custom resources (built from each CRD
// version's openAPIV3Schema the way apiextensions-apiserver builds them), and the paths of every
// served resource with the query parameters kubectl looks for (fieldValidation on writes tells
// it the server validates fields itself).
//
// Documents are built on first request after the catalogue's revision changes, never per request;
// a group-version's v3 document is carried over to the next revision when the catalogue still
// holds the same *catalog.Resource values for it, so resources must be replaced, not mutated.
package openapi

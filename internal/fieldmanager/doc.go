// Package fieldmanager owns field management: it builds, per served resource, the
// k8s.io/apimachinery/pkg/util/managedfields FieldManager that records managedFields on every
// write and merges server-side apply requests. Its work is feeding that library the right
// schema: client-go's (and apiextensions') type converters for built-in types, the CRD's
// structural schema for custom resources, a deduced, atomic one when a CRD has no schema.
//
// A CRD annotated apply.lapis.dev/list-conventions: metacontroller (package conventions) gets
// Metacontroller's convention for the lists its schema is silent about: a list whose items all
// carry a conventional key merges as a list map keyed by it. SMD's schema is static and merges
// only values typed with one schema, so such a resource's field manager is made per request
// with a listSession that sees the live object, the applied configuration and managedFields
// before typing any of them, decides once for all (listdecide.go), and types them with the
// CRD's OpenAPI schema with those lists marked (listschema.go), cached by decision set.
package fieldmanager

// Package apply owns field management: it builds, per served resource, the
// k8s.io/apimachinery/pkg/util/managedfields FieldManager that records managedFields on every
// write and merges server-side apply requests. Its work is feeding that library the right
// schema: client-go's (and apiextensions') type converters for built-in types, the CRD's
// structural schema for custom resources, a deduced, atomic one when a CRD has no schema.
package apply

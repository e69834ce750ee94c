// Package catalog is lapis's resource catalogue: the set of resources served at any moment,
// keyed by group/version/resource, with what the write pipeline needs to know about each one
// (scope, names, how objects are normalized, defaulted and validated, which fields can be
// selected on). Built-in types are registered once at start-up (see package builtin); custom
// resources are added and removed as CustomResourceDefinitions come and go (see package crd).
package catalog

// Package kube drives every built-in type through kube-apiserver's own code, without its generic
// registry, server or storage: decoding, defaulting and conversion through legacyscheme, the
// create and update strategies of pkg/registry/<group>/<resource> (through rest.BeforeCreate and
// rest.BeforeUpdate, which order PrepareForCreate/Update, validation, warnings and Canonicalize
// as kube-apiserver does), kube's printers for Tables and kube's field-selector attributes.
//
// What is served (names, versions, scope, verbs, subresources, short names, categories) is kube
// 1.37's own discovery document (discovery/kube-1.37.json); how each resource behaves is a row of
// its strategies (types.go). One generic Behavior (behavior.go) does the rest.
package kube

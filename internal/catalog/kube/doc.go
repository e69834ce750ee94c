// Package kube drives built-in types through kube-apiserver's own code, without its generic
// registry, server or storage: decoding, defaulting and conversion through legacyscheme, the
// create and update strategies of pkg/registry/<group>/<resource> (through rest.BeforeCreate and
// rest.BeforeUpdate, which order PrepareForCreate/Update, validation, warnings and Canonicalize
// as kube-apiserver does), kube's printers for Tables and kube's field-selector attributes.
//
// A built-in type is a row of data (Type). This is the first step of issue 8: the package is
// tested against kube-apiserver 1.37's answers but not yet wired into the objects pipeline, where
// it is to replace catalog/builtin's hand-written types.
package kube

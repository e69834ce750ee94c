// Package builtin assembles the built-in resources: every type kube-apiserver 1.37 stores,
// driven by kube's own code (package kube), and apiextensions.k8s.io/v1
// customresourcedefinitions, whose strategy follows apiextensions-apiserver's validation.
package builtin

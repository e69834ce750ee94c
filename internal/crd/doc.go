// Package crd serves CustomResourceDefinitions: a controller that watches CRDs in storage,
// accepts their names, marks them Established, registers their custom resources in the
// catalogue (every lapis sharing an etcd converges on the same set), and on deletion removes
// their custom resources before letting the CRD go; and the Behavior of custom resources built
// from a version's structural schema (pruning, defaulting, validation).
package crd

// Package crd serves CustomResourceDefinitions: a controller that watches CRDs in storage,
// accepts their names, marks them Established, registers their custom resources in the
// catalogue (every lapis sharing an etcd converges on the same set), and on deletion removes
// their custom resources before letting the CRD go; and the Behavior of custom resources built
// from a version's structural schema (pruning, defaulting, validation).
//
// Custom resources of CRDs with conversion webhooks (spec.conversion.strategy Webhook) convert
// through kube's CR converter (apiextensions-apiserver's CRConverterFactory, calling the
// webhook with ConversionReview v1 or v1beta1 over k8s.io/apiserver's webhook client, trusting
// the caBundle): between a served version and the storage version (the catalogue's
// Conversion: reads, writes, lists and watches at another version than stored's), between any
// two versions for field management (ConvertVersion) and for admission webhooks registered for
// another version. Service references resolve as Controller.UseWebhookConversion says (lapis:
// the Service's EndpointSlices, as admission webhooks). CRDs with strategy None convert by
// apiVersion alone, in the objects pipeline.
package crd

// Package aggregator is kube-apiserver's aggregation layer on lapis's serving, with
// kube-aggregator's own controllers: APIServices with a service are served by proxying their
// group version to the extension API server (kube's proxy handler, authenticated with the
// front-proxy client certificate and the X-Remote-* headers, after lapis has authorized the
// request), their Available condition kept by kube's availability controllers and their groups
// merged into discovery by kube's discovery manager; the local APIServices, one for each group
// version lapis serves and for each custom resource version, are kept by kube-apiserver's
// autoregister and CRD registration controllers. The code kube keeps unexported is in
// internal/upstream/aggregator.
package aggregator

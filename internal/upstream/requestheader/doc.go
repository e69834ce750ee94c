// Package requestheader is kube-apiserver's --requestheader-* options and their validation,
// copied from k8s.io/apiserver v0.37.2 pkg/server/options (RequestHeaderAuthenticationOptions)
// and k8s.io/kubernetes v1.37.2 pkg/kubeapiserver/options (the check that the request-header
// CA and the client CA do not overlap without allowed names), whose packages bring kube's
// generic server with them.
package requestheader

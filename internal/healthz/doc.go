// Package healthz serves kube-apiserver's health endpoints as k8s.io/apiserver's healthz
// package does: /healthz, /livez and /readyz, their ?verbose and ?exclude= forms and one path
// per check (/livez/etcd), and kube's probes of etcd and of logging. Which checks each endpoint
// lists is the server's (internal/server/health.go).
package healthz

// Package samplereference runs k8s.io/sample-apiserver v0.37.2, Kubernetes' example extension
// API server (group wardle.example.com: Flunders and Fischers), as the extension server of an
// API server under test, for the aggregation tests (test/aggregation).
//
// The binary is built once from the Go module proxy by test/aggregation/build-sample-apiserver.sh
// into kube-reference's cache, next to kube-apiserver (kubereference.BinDir). Tests never build
// it: Built says whether it is there, and why not.
//
// Start runs it on loopback the way Kubernetes' e2e Aggregator spec deploys it
// (test/e2e/apimachinery/aggregator.go in k8s.io/kubernetes v1.37.2), as a process instead of a
// pod: with its own etcd, a serving certificate of a CA made for it naming the Service the
// APIService points at (<service>.<namespace>.svc, the name the aggregator verifies with the
// APIService's caBundle), the spec's flags, and — where the pod has its in-cluster
// configuration — a kubeconfig for the API server under test (ServiceAccountKubeconfig: the
// token of the ServiceAccount the pod would run as) for delegated authentication and
// authorization (TokenReview, SubjectAccessReview, the
// kube-system/extension-apiserver-authentication ConfigMap) and its informers.
package samplereference

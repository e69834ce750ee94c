// Package aggregation compares API aggregation on lapis with kube-apiserver 1.37's
// (kube-aggregator), with a real extension API server behind each: k8s.io/sample-apiserver
// v0.37.2 (internal/testkit/samplereference), run as a process on loopback with its own etcd,
// delegating authentication and authorization to the server in front of it.
//
// TestMain starts lapis in-process and kube-apiserver (alone, without kube-controller-manager,
// on an etcd of its own) with the same front-proxy flags: a request-header CA of the test's, the
// proxy client certificate it signs (--proxy-client-cert-file/--proxy-client-key-file), its
// allowed name and the X-Remote-* headers (--requestheader-*). Neither runs with
// --enable-aggregator-routing.
//
// TestAggregation sets up, on each server, what Kubernetes' e2e Aggregator spec sets up (its
// RBAC objects, the sample-apiserver's Secret and ServiceAccount, the
// v1alpha1.wardle.example.com APIService with the caBundle) but for the Service, which is an
// ExternalName Service naming localhost (kube refuses loopback EndpointSlice addresses), and
// compares, each answer against kube's:
//   - the APIService reaching Available=True, whole (conditions, reasons, messages), and
//     `kubectl get apiservices`;
//   - `kubectl api-resources` and `kubectl explain` of the sample's kinds;
//   - create, get, list, watch and delete of flunders through the aggregator, with kubectl and
//     client-go;
//   - refusals: a 403 from the aggregator for users RBAC refuses, and from the extension
//     server's delegated authorization (SubjectAccessReview) when asked as the front proxy;
//   - discovery: legacy /apis, /apis/wardle.example.com, /apis/wardle.example.com/v1alpha1 and
//     aggregated /apis (apidiscovery.k8s.io/v2);
//   - OpenAPI: /openapi/v3's listing and document of the group, /openapi/v2's definitions and
//     paths of it;
//   - with the sample-apiserver stopped: the Available condition (False, reason, message), the
//     proxy's answer (code and body), kubectl's view, aggregated discovery's freshness: Stale,
//     and legacy /apis.
//
// What a comparison masks, and only that: uids, timestamps, resourceVersions, kubectl's AGE
// column, the OpenAPI v3 content hash, and each server's own values that must differ: its
// address, its sample-apiserver's port and CA bundle (masking). A state waited for (Available,
// a group in discovery) is waited for on both servers, kube for up to two minutes, lapis for
// up to 30 s more than kube took; a failure names the server, the state and the last answer,
// and shows where lapis's answer differs from kube's.
//
// TestE2EAggregator is a copy of the e2e spec itself (e2e_aggregator_test.go, which says what
// was changed for a process instead of a Deployment), run against kube and then lapis.
//
// AGGREGATION_KUBE_TWICE=1 puts a second kube-apiserver in lapis's place (failures still say
// "lapis"): every comparison must then pass, which checks that the tests compare only what is
// deterministic and mask enough.
//
// Both binaries are built outside go test, once: kube-apiserver by
// ../shared/reference/kube-reference (about 15 minutes), the sample-apiserver by
// build-sample-apiserver.sh in this directory; without either every test skips, saying which
// and how to build it. AGGREGATION_KEEP=1 keeps the servers' logs (they are kept when a test
// fails): the directory is printed at the end.
//
//	go test ./test/aggregation/ -count=1 -v
package aggregation

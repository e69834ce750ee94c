// Package againstkube sends the same raw HTTP requests to lapis and to a real kube-apiserver 1.37
// (started by ../shared/reference/kube-reference with KCM=0, the API server alone, as envtest
// runs it) and compares the answers: the status code, and for metav1.Status bodies the status,
// reason, message and details (uids dropped; resourceVersions and times in messages normalised); other
// bodies by kind, watch streams by event type and object. Comparisons are strict: a case that
// may differ says so in its table, with the reason (e.g. where kube answers 500, lapis must
// answer a 4xx, as lapis never answers bad input with a 500).
//
// The tables cover what kube-apiserver allows per verb and subresource (matrix_test.go), writes
// to subresources of missing objects, watches with odd timeouts, lists at a future
// resourceVersion, JSON-patch limits, strategic merge keys and patches whose result does not decode (requests_test.go), an object of
// every storable built-in kind through every verb, representation and subresource, its bodies
// compared whole after masking (builtin_test.go, mask_test.go), and refused objects and updates
// of the common kinds (invalid_test.go), and authorization (authz_test.go): access reviews,
// requests, `kubectl auth can-i`/`--list`/`whoami` and refusals (escalation, impersonation,
// apply that creates) for users bound to bootstrap and custom roles, a ServiceAccount token and
// anonymous requests. A recovered panic in lapis's log during a case fails that case.
// KUBEDIFF_KUBE_ONLY=1 sends the last three to kube alone, to check their fixtures.
//
// TestMain starts one lapis in-process and one kube-apiserver in a temporary directory, and
// stops both at the end. kube-apiserver is built once (about 15 minutes) into
// ~/.cache/kube-reference/v1.37.2 (or $KUBE_REFERENCE_BIN) by `kube-reference start DIR`;
// where it is not built every test skips, saying so — `go test ./...` never builds it.
// Run with `go test ./test/against-kube-apiserver/ -count=1 -v`.
package againstkube

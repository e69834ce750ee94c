// Package againstreference runs the same requests against lapis and against the reference server
// (upstream apiextensions-apiserver on etcd, started by ../shared/reference/reference-server) and
// compares what comes back: objects, managedFields, errors. The reference serves custom
// resources only, so the scenarios use CRDs. The tests skip when the reference cannot be
// started; `go test ./test/against-reference-server/ -count=1 -v` (also run by .ci/run) shows whether it ran.
package againstreference

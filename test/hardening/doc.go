// Package hardening attacks a real lapis binary the way a hostile client and a crashing machine
// would, and checks the invariants that must survive both.
//
// TestLoad sends a seeded stream of random requests from 8 concurrent clients for a bounded
// time: every verb (watches with short timeouts), every path lapis routes (built-in resources,
// a namespaced and a cluster-scoped CRD and their custom resources, the status, scale and
// finalize subresources, bogus paths), every body and Accept type (JSON, YAML, Protobuf, Table,
// PartialObjectMetadata, garbage), kube's query parameters with good and bad values, and
// mutated, deep, huge, truncated or random bodies and patches of all four patch types. It
// fails on any 5xx other than 503/504, a transport error or an answer not given in bounded
// time, an answer over 64 MiB, a 2xx to DELETE on a subresource, a panic in lapis's log, lapis
// exceeding its RSS bound, or lapis not ready at the end. Each failure is printed with the
// request that caused it, grouped by kind. When lapis dies or outgrows its memory bound it is
// killed and restarted on the same data dir, so one run finds more than one bug.
//
// TestCrashConsistency kills lapis with SIGKILL while 8 clients create, update, patch and
// delete ConfigMaps and custom resources, restarts it on the same data dir, and checks that
// every acknowledged write is there with its acknowledged resourceVersion (an acknowledged
// delete: gone); an object whose last write was not acknowledged may be in either state. It
// does this for three rounds on one data dir.
//
// Both run in `go test ./...` with a default load of 60 s. To run longer or from another seed:
//
//	LAPIS_HARDENING_DURATION=30m LAPIS_HARDENING_SEED=42 go test ./test/hardening/ -run TestLoad -count=1 -v -timeout 0
//
// LAPIS_HARDENING_BIN=/path/to/lapis (or LAPIS_BIN, which the acceptance tests honour too) tests
// that binary instead of building ./cmd/lapis (e.g. one built from an older commit, to see what
// the test finds there).
//
// The seed fixes each client's request stream; only timing (which requests interleave, how many
// fit in the duration) varies between runs with the same seed.
package hardening

// Package sequences compares random sequences of writes to one object with kube-apiserver 1.37:
// server-side applies (plain, forced, keeping or dropping the fields of a manager's last
// apply), merge, JSON and strategic merge patches, creates, updates, status and scale writes
// (apply, patch, update) and dry runs, by several managers (some sequences by more than ten
// Update managers, which kube folds into ancient-changes), on custom resources whose random
// schemas use every merge marker, nested (a pool of CRDs made once per run), and on
// ConfigMaps, Deployments, Services and Pods. Each request's status code, Warning headers and
// body — the object with its managedFields, or the Status with its conflict causes — is
// compared after masking what differs by design (uids, resourceVersions, times, cluster IPs and
// node ports, the random suffix of a Pod's token volume, the object's name).
//
// A seed draws the same sequence each time (steps.go): no map order, math/rand/v2's PCG.
//
//   - go test ./test/sequences/ runs the recorded seeds (1 to recordedSeeds) on lapis and
//     compares with testdata/kube-<version>.json.gz, kube-apiserver's answers recorded by
//     SEQUENCES_RECORD=1 (needs kube-apiserver; see below). It never records from lapis.
//   - SEQUENCES=N [SEQUENCES_FROM=S] go test ./test/sequences/ -run TestAgainstKube -v -timeout 0
//     runs N sequences from seed S on lapis and on a live kube-apiserver at once (started alone,
//     KCM=0, by ../shared/reference/kube-reference, or the one SEQUENCES_KUBECONFIG names), four
//     at a time; a difference is shrunk to its shortest sequence and printed with its seed.
package sequences

// Package sharedetcd proves that lapis keeps etcd data exactly as kube-apiserver 1.37 does
// (issue 26): the same corpus of objects written through one server is served identically by
// the other started on the same etcd — every object, every list and its Table, a watch from a
// list's resourceVersion, and the keys under /registry/ — in both directions, after updates and
// deletes, with both servers running side by side, and from a restored etcd snapshot.
//
// kube-apiserver is the built reference binary (internal/testkit/kubereference); without it the
// tests skip saying why. etcd is lapis's own version (3.7, embedded, in the test process), which
// kube-apiserver talks to over loopback; lapis runs as a built subprocess. kube-apiserver runs
// with kube-controller-manager's controllers that lapis runs itself (so both control planes keep
// the same objects), and both servers share one CA and ServiceAccount key, so that nothing they
// publish differs by configuration.
//
// What a comparison ignores, each on purpose (see masks_test.go): the resourceVersion of a list
// itself (the etcd revision at the read), Age cells of Tables, and the few objects the running
// server rewrites by itself (its identity Lease, the kubernetes Service's endpoints).
package sharedetcd

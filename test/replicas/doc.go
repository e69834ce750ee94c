// Package replicas tests lapis replicas sharing an etcd cluster, as kube-apiserver replicas
// do: a 3-member etcd cluster (etcd's embed package, in the test process) and 3 lapis
// processes on loopback, a mixed load, one replica killed and one etcd member stopped midway.
// BenchmarkReplicas measures throughput, latency and each process's CPU time per op with 1, 2
// and 3 replicas on one such cluster (run only with -bench).
package replicas

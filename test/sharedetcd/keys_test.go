package sharedetcd

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// keyInfo is what is compared of a key: whether it is attached to an etcd lease (Events are:
// kube stores them with --event-ttl), and when it was last written.
type keyInfo struct {
	lease       bool
	modRevision int64
}

// etcdKeys are the keys under /registry/, as `etcdctl get --prefix /registry/` lists them
// (values too: a keys-only read does not tell which keys have a lease).
func etcdKeys(t *testing.T, e *etcdServer) map[string]keyInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := e.client.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("listing etcd's keys: %v", err)
	}
	keys := make(map[string]keyInfo, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		keys[string(kv.Key)] = keyInfo{lease: kv.Lease != 0, modRevision: kv.ModRevision}
	}
	return keys
}

// serverOwnKey is why a key is the running server's own (an identity or leader Lease, a
// master lease of kube's endpoint reconciler), or a probe the test writes; "" for the others.
// Such keys may come and go with the server that runs.
func serverOwnKey(key string) string {
	switch {
	case strings.HasPrefix(key, "/registry/masterleases/"):
		return "the lease endpoint reconciler's master lease of a running server (TTL 15 s, removed at shutdown)"
	case strings.HasPrefix(key, "/registry/peerserverleases/"):
		return "kube-apiserver's peer endpoint lease, its address for the other API servers while it runs"
	case strings.HasPrefix(key, "/registry/leases/kube-system/apiserver-"):
		return "an API server's identity Lease (renewed while it runs; kube deletes expired ones after an hour)"
	case key == "/registry/leases/kube-system/"+lapisLeaderLease:
		return "lapis's singleton-work Lease, the counterpart of kube-controller-manager's leader Lease"
	case probeKey.MatchString(key):
		return "written by the test"
	case kubeStartupKey(key):
		return kubeStartupWhy
	}
	return ""
}

// kubeStartupWhy is why kube-system/extension-apiserver-authentication is left out: each
// server's cluster-authentication-info controller adds its own CAs to it (kube's and lapis's
// differ), so its content depends on which servers ran.
const kubeStartupWhy = "each server adds its own client and request-header CAs to it"

// kubeStartupKey tells the keys of kube-apiserver's start-up objects (kubeStartupWhy).
func kubeStartupKey(key string) bool {
	return key == "/registry/configmaps/kube-system/extension-apiserver-authentication"
}

// restless tells whether a key is written by the running servers again and again: their own
// keys (serverOwnKey), and the kubernetes Service's endpoints, kept by their endpoint
// reconcilers.
func restless(key string) bool {
	return serverOwnKey(key) != "" || key == "/registry/services/endpoints/default/kubernetes" ||
		key == "/registry/endpointslices/default/kubernetes"
}

// probeKey matches the keys of what the test writes to check a watch or a side-by-side
// server.
var probeKey = regexp.MustCompile(`/sd-(probe|side)-`)

// compareKeys fails t for each key the second server added to what the first left (but
// server-own keys), removed, or attached to an etcd lease differently.
func compareKeys(t *testing.T, left, now map[string]keyInfo, first, second string) {
	t.Helper()
	var added, removed, leases []string
	for _, k := range sortedKeys(now) {
		if _, ok := left[k]; !ok && serverOwnKey(k) == "" {
			added = append(added, k)
		}
	}
	for _, k := range sortedKeys(left) {
		info, ok := now[k]
		switch {
		case !ok && serverOwnKey(k) == "":
			removed = append(removed, k)
		case ok && info.lease != left[k].lease:
			leases = append(leases, fmt.Sprintf("%s: attached to a lease: %t → %t", k, left[k].lease, info.lease))
		}
	}
	if len(added) > 0 {
		t.Errorf("keys %s added under /registry/ to what %s left (a second copy of a bootstrap object is one of these):\n\t%s", second, first, strings.Join(added, "\n\t"))
	}
	if len(removed) > 0 {
		t.Errorf("keys %s left that are gone once %s started and settled:\n\t%s", first, second, strings.Join(removed, "\n\t"))
	}
	if len(leases) > 0 {
		t.Errorf("keys whose etcd lease changed once %s started (%s → %s):\n\t%s", second, first, second, strings.Join(leases, "\n\t"))
	}
}

// checkMasterLease fails t unless the running server wrote the master lease of its advertised
// address after since (the revision before it started), as kube's lease endpoint reconciler
// keeps it (kube-apiserver's --endpoint-reconciler-type lease, its default).
func checkMasterLease(t *testing.T, s *server, e *etcdServer, advertise string, since int64) {
	t.Helper()
	key := "/registry/masterleases/" + advertise
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if info, ok := etcdKeys(t, e)[key]; ok && info.modRevision > since {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: no key %s once it settled: kube-apiserver writes it for its advertised address as it starts, and renews it while it runs", s.name, key)
			return
		}
	}
}

// differentKeys fails t for keys only one of two corpora left, but server-own ones, and for
// keys attached to an etcd lease in one and not the other.
func differentKeys(t *testing.T, a, b map[string]keyInfo, aName, bName string) {
	t.Helper()
	var only []string
	for _, k := range sortedKeys(a) {
		if _, ok := b[k]; !ok && serverOwnKey(k) == "" {
			only = append(only, fmt.Sprintf("only %s's: %s", aName, k))
		} else if ok && a[k].lease != b[k].lease {
			only = append(only, fmt.Sprintf("%s: attached to an etcd lease: %s %t, %s %t", k, aName, a[k].lease, bName, b[k].lease))
		}
	}
	for _, k := range sortedKeys(b) {
		if _, ok := a[k]; !ok && serverOwnKey(k) == "" {
			only = append(only, fmt.Sprintf("only %s's: %s", bName, k))
		}
	}
	slices.Sort(only)
	if len(only) > 0 {
		t.Errorf("the same corpus written through %s and through %s left other keys under /registry/:\n\t%s", aName, bName, strings.Join(only, "\n\t"))
	}
}

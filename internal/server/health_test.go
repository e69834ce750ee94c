package server

import (
	"reflect"
	"testing"
)

func TestHealthChecksAsKube(t *testing.T) {
	names := map[string][]string{}
	hooks := newPostStartHooks([]string{"a-hook"}).checks()
	always := func() bool { return true }
	for path, checks := range newHealth(healthSources{ready: always, informersSynced: always, hooks: hooks}) {
		for _, c := range checks {
			names[path] = append(names[path], c.Name)
		}
	}
	// kube-apiserver's checks, in its order (its /readyz?verbose and /livez?verbose):
	// loopback-serving-certificate in /healthz and /livez only (k8s.io/apiserver's
	// options/serving_with_loopback.go), "etcd" in all three (options/etcd.go),
	// "etcd-readiness" and "informer-sync" in /readyz only, the post-start hooks, and /readyz's
	// "shutdown" last.
	want := map[string][]string{
		"/healthz": {"ping", "log", "loopback-serving-certificate", "etcd", "poststarthook/a-hook"},
		"/livez":   {"ping", "log", "loopback-serving-certificate", "etcd", "poststarthook/a-hook"},
		"/readyz":  {"ping", "log", "etcd", "etcd-readiness", "informer-sync", "poststarthook/a-hook", "shutdown"},
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("checks %v, want %v", names, want)
	}
}

package sharedetcd

import (
	"path/filepath"
	"testing"

	"github.com/lapis-dev/lapis/internal/testkit/kubereference"
)

// chain is one etcd and the servers that take turns on it, all at one endpoint.
type chain struct {
	top     *testing.T // owns the etcd and the servers: they outlive the subtests
	dir     string
	etcd    *etcdServer
	at      endpoint
	pki     kubereference.PKI
	running *server // the server left running by the last point, if any
}

// newChain starts an etcd in a new directory of root, for servers at a new port on
// 127.0.0.1 that advertise advertise.
func newChain(t *testing.T, root, name, advertise string) *chain {
	t.Helper()
	c := &chain{top: t, dir: filepath.Join(root, name)}
	c.etcd = startEtcd(t, filepath.Join(c.dir, "etcd"))
	port, err := kubereference.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	c.at = endpoint{address: "127.0.0.1", advertise: advertise, port: port}
	if c.pki, err = kubereference.EnsurePKI(filepath.Join(c.dir, "kube")); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *chain) startKube(t *testing.T) *server {
	t.Helper()
	c.running = startKube(t, c.top, filepath.Join(c.dir, "kube"), c.etcd, c.at, false)
	return c.running
}

func (c *chain) startLapis(t *testing.T) *server {
	t.Helper()
	c.running = startLapis(t, c.top, filepath.Join(c.dir, "lapis"), c.pki, c.etcd, c.at)
	return c.running
}

// handover is what the first server left on etcd for the second to serve.
type handover struct {
	first  *recording
	left   map[string]keyInfo // etcd's keys once the first stopped
	since  int64              // etcd's revision then
	allocs []any              // the first's answers to allocationProbes
}

// leave records what s serves of rs and how it answers allocationProbes, runs before (if not
// nil: a snapshot, while s still serves), stops s and notes the keys it left.
func leave(t *testing.T, s *server, c *chain, rs []resource, before func()) handover {
	t.Helper()
	h := handover{allocs: probeAllocations(t, s), first: record(t, s, rs)}
	if before != nil {
		before()
	}
	s.stop(t)
	c.running = nil
	h.left, h.since = etcdKeys(t, c.etcd), revision(t, c.etcd)
	return h
}

// readBack compares what s, started on the etcd the first server left, serves with what the
// first served: each in a subtest named for the point it proves.
func readBack(t *testing.T, s *server, c *chain, rs []resource, h handover, probe string) {
	t.Helper()
	quiet(t, c.etcd)
	keys := etcdKeys(t, c.etcd)
	got := record(t, s, rs)
	dump(t, h.first, probe+"-first")
	dump(t, got, probe+"-second")
	t.Run("served", func(t *testing.T) { compareRecordings(t, rs, h.first, got) })
	t.Run("watch from the first server's list", func(t *testing.T) { checkStaleWatch(t, s, rs, h.first, h.since) })
	t.Run("etcd keys", func(t *testing.T) {
		compareKeys(t, h.left, keys, h.first.server, s.name)
		checkMasterLease(t, s, c.etcd, c.at.advertise, h.since)
	})
	t.Run("allocations", func(t *testing.T) { compareAllocations(t, h.allocs, probeAllocations(t, s), h.first.server, s.name) })
	t.Run("watch from its own list", func(t *testing.T) { checkFreshWatch(t, s, rs, probe) })
}

// TestSharedEtcd runs the points of issue 26 in order, on two etcds: "kube-first", where
// kube-apiserver writes the corpus (points 1, 3 and 4, and the snapshot of point 6), and
// "lapis-first", where lapis does (points 2 and 3); point 5 compares the keys both left. A
// point that cannot start its servers stops there; the points after it that need what it
// leaves skip, saying so.
func TestSharedEtcd(t *testing.T) {
	if skip != "" {
		t.Skip(skip)
	}
	root := t.TempDir()
	s := &suite{root: root, snapshot: filepath.Join(root, "kube.snapshot"),
		one: newChain(t, root, "kube-first", "192.0.2.10"), two: newChain(t, root, "lapis-first", "192.0.2.10")}
	t.Run("1-kube-writes-lapis-reads", s.kubeWritesLapisReads)
	t.Run("3-lapis-updates-kube-reads", func(t *testing.T) { s.updateAndHandOver(t, s.one, "lapis", "point 1", "sd-probe-3a") })
	t.Run("4-side-by-side", func(t *testing.T) { sideBySide(t, s.one) })
	t.Run("2-lapis-writes-kube-reads", s.lapisWritesKubeReads)
	t.Run("3-kube-updates-lapis-reads", func(t *testing.T) { s.updateAndHandOver(t, s.two, "kube-apiserver", "point 2", "sd-probe-3b") })
	t.Run("5-same-etcd-keys", func(t *testing.T) {
		if s.h1.left == nil || s.h2.left == nil {
			t.Skip("needs the keys points 1 and 2 left")
		}
		differentKeys(t, s.h1.left, s.h2.left, "kube-apiserver", "lapis")
	})
	t.Run("6-kube-snapshot-under-lapis", s.snapshotUnderLapis)
}

// suite is what TestSharedEtcd's points share.
type suite struct {
	root, snapshot string
	one, two       *chain
	rs             []resource // what is recorded: every resource kube-apiserver serves
	h1, h2         handover   // what points 1 and 2 left
}

// kubeWritesLapisReads is point 1 (and takes point 6's snapshot).
func (s *suite) kubeWritesLapisReads(t *testing.T) {
	kube := s.one.startKube(t)
	writeCorpus(t, kube)
	settleCorpus(t, kube, s.one.etcd)
	s.rs = discoverResources(t, kube)
	s.h1 = leave(t, kube, s.one, s.rs, func() { saveSnapshot(t, s.one.etcd, s.snapshot) })
	readBack(t, s.one.startLapis(t), s.one, s.rs, s.h1, "sd-probe-1")
}

// lapisWritesKubeReads is point 2.
func (s *suite) lapisWritesKubeReads(t *testing.T) {
	lapis := s.two.startLapis(t)
	writeCorpus(t, lapis)
	settleCorpus(t, lapis, s.two.etcd)
	if s.rs == nil {
		s.rs = discoverResources(t, lapis)
	}
	s.h2 = leave(t, lapis, s.two, s.rs, nil)
	readBack(t, s.two.startKube(t), s.two, s.rs, s.h2, "sd-probe-2")
}

// updateAndHandOver is point 3 on c: the server the previous point left running (name)
// updates and deletes, is stopped, and the other must serve what it left.
func (s *suite) updateAndHandOver(t *testing.T, c *chain, name, point, probe string) {
	first := needRunning(t, c, name, point)
	updateCorpus(t, first, c.etcd)
	h := leave(t, first, c, s.rs, nil)
	var second *server
	if name == "lapis" {
		second = c.startKube(t)
	} else {
		second = c.startLapis(t)
	}
	t.Run("terminating", func(t *testing.T) { checkTerminating(t, second) })
	readBack(t, second, c, s.rs, h, probe)
}

// snapshotUnderLapis is point 6: point 1's snapshot, restored, served by lapis.
func (s *suite) snapshotUnderLapis(t *testing.T) {
	if s.h1.first == nil {
		t.Skip("needs point 1's snapshot and recording")
	}
	if s.one.running != nil {
		s.one.running.stop(t) // the restored etcd's servers take its endpoint
		s.one.running = nil
	}
	snap := &chain{top: t, dir: filepath.Join(s.root, "snapshot"), at: s.one.at, pki: s.one.pki}
	restoreSnapshot(t, s.snapshot, filepath.Join(snap.dir, "etcd"))
	snap.etcd = startEtcd(t, filepath.Join(snap.dir, "etcd"))
	restored := handover{first: s.h1.first, allocs: s.h1.allocs, left: etcdKeys(t, snap.etcd), since: revision(t, snap.etcd)}
	readBack(t, snap.startLapis(t), snap, s.rs, restored, "sd-probe-6")
}

// revision is e's current revision.
func revision(t *testing.T, e *etcdServer) int64 {
	t.Helper()
	rev, err := e.revision(t.Context())
	if err != nil {
		t.Fatalf("etcd revision: %v", err)
	}
	return rev
}

// needRunning is the server the previous point left running on c, or skips t.
func needRunning(t *testing.T, c *chain, name, point string) *server {
	t.Helper()
	if c.running == nil || c.running.name != name {
		t.Skipf("needs %s running as %s left it", name, point)
	}
	return c.running
}

// sideBySide starts lapis beside the kube-apiserver point 3 left on one's etcd (without its
// kube-controller-manager: lapis runs those controllers), on another loopback address and
// advertised address, and checks that both serve the same state, that applies conflict across
// them as on one server, and that the kubernetes Service's endpoints list both.
func sideBySide(t *testing.T, one *chain) {
	kube := needRunning(t, one, "kube-apiserver", "point 3")
	if err := kube.stopControllers(); err != nil {
		t.Errorf("stopping kube-controller-manager: %v", err)
	}
	beside := endpoint{address: "127.0.0.2", advertise: "192.0.2.11", port: one.at.port}
	since := revision(t, one.etcd)
	lapis := startLapis(t, one.top, filepath.Join(one.dir, "lapis-beside"), one.pki, one.etcd, beside)
	quiet(t, one.etcd)
	t.Run("master lease", func(t *testing.T) { checkMasterLease(t, lapis, one.etcd, beside.advertise, since) })
	t.Run("informers converge", func(t *testing.T) { checkInformersConverge(t, kube, lapis) })
	t.Run("apply conflicts and merges", func(t *testing.T) { checkApplyConflict(t, kube, lapis) })
	t.Run("kubernetes endpoints list both", func(t *testing.T) {
		checkBothEndpoints(t, []*server{kube, lapis}, []string{one.at.advertise, beside.advertise})
	})
	lapis.stop(t)
	kube.stop(t)
	one.running = nil
}

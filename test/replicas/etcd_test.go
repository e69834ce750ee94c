package replicas

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// cluster is a 3-member etcd cluster in the test process, on loopback.
type cluster struct {
	members    []*embed.Etcd
	clientURLs []string

	configs map[*embed.Etcd]*embed.Config

	mu      sync.Mutex
	stopped map[*embed.Etcd]bool
}

func freeURL(t testing.TB) url.URL {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}

// startCluster starts n members, each on its own ports and directory, and waits until they
// form a cluster. They stop when t ends. Without fsync, members do not sync their log to disk
// (a test's data on a shared machine); a benchmark wants etcd as deployed. The members'
// goroutines carry the pprof label etcd=<member>, so that a CPU profile of the test process
// tells their CPU time from the clients'.
func startCluster(t testing.TB, n int, fsync bool) *cluster {
	t.Helper()
	c := &cluster{}
	var cfgs []*embed.Config
	var initial []string
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = t.TempDir()
		client, peer := freeURL(t), freeURL(t)
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenClientHttpUrls = nil
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.InitialClusterToken = "lapis-replicas"
		cfg.ClusterState = embed.ClusterStateFlagNew
		cfg.LogLevel = "error"
		// Elections within a second when a member goes (ticks of 50 ms on a loaded machine).
		cfg.TickMs, cfg.ElectionMs = 50, 500
		cfg.UnsafeNoFsync = !fsync
		initial = append(initial, cfg.Name+"="+peer.String())
		c.clientURLs = append(c.clientURLs, client.String())
		cfgs = append(cfgs, cfg)
	}
	c.configs = map[*embed.Etcd]*embed.Config{}
	errs := make(chan error, n)
	started := make(chan *embed.Etcd, n)
	for _, cfg := range cfgs {
		cfg.InitialCluster = strings.Join(initial, ",")
		go pprof.Do(context.Background(), pprof.Labels("etcd", cfg.Name), func(context.Context) {
			e, err := embed.StartEtcd(cfg)
			if err != nil {
				errs <- fmt.Errorf("member %s: %w", cfg.Name, err)
				return
			}
			c.mu.Lock()
			c.configs[e] = cfg
			c.mu.Unlock()
			started <- e
		})
	}
	for range n {
		select {
		case err := <-errs:
			t.Skipf("cannot start the etcd cluster (%v)", err)
		case e := <-started:
			c.members = append(c.members, e)
			t.Cleanup(func() { c.stop(e) })
		case <-time.After(60 * time.Second):
			t.Skip("the etcd cluster did not start within 60s")
		}
	}
	for _, e := range c.members {
		select {
		case <-e.Server.ReadyNotify():
		case <-time.After(60 * time.Second):
			t.Skip("the etcd cluster did not become ready within 60s")
		}
	}
	return c
}

// stop stops member e (once: embed's Close may not be called twice).
func (c *cluster) stop(e *embed.Etcd) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped == nil {
		c.stopped = map[*embed.Etcd]bool{}
	}
	if !c.stopped[e] {
		c.stopped[e] = true
		e.Close()
	}
}

// restart starts the stopped member e again on its directory and ports; it rejoins the
// cluster.
func (c *cluster) restart(t *testing.T, e *embed.Etcd) *embed.Etcd {
	t.Helper()
	c.mu.Lock()
	cfg := c.configs[e]
	c.mu.Unlock()
	again, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("restarting etcd member %s: %v", cfg.Name, err)
	}
	t.Cleanup(func() { c.stop(again) })
	select {
	case <-again.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatalf("etcd member %s not ready within 30s of its restart", cfg.Name)
	}
	return again
}

package kubereference

import (
	"net/http"
	"testing"
	"time"
)

func TestStartEtcd(t *testing.T) {
	if why := EtcdInstalled(); why != "" {
		t.Skip(why)
	}
	dir := t.TempDir()
	e, err := StartEtcd(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(e.URL + "/health")
	if err != nil {
		t.Fatalf("etcd at %s after StartEtcd: %v", e.URL, err)
	}
	resp.Body.Close()
	if err := e.Stop(); err != nil {
		t.Errorf("Stop: %v (want a clean exit on SIGTERM)", err)
	}
	if resp, err := client.Get(e.URL + "/health"); err == nil {
		resp.Body.Close()
		t.Errorf("etcd at %s still answers after Stop", e.URL)
	}
}

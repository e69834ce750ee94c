package sharedetcd

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	utlsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// saveSnapshot saves a snapshot of e at path, as `etcdctl snapshot save` does (its code:
// client/v3/snapshot).
func saveSnapshot(t *testing.T, e *etcdServer, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cfg := clientv3.Config{Endpoints: []string{e.url}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if _, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, path); err != nil {
		t.Fatalf("etcd snapshot: %v", err)
	}
}

// restoreSnapshot restores the snapshot at path into a new data directory for startEtcd
// (dataDir/etcd), as `etcdutl snapshot restore` does (its code: etcdutl/v3/snapshot), the member
// named and addressed as lapis's embedded etcd names its own.
func restoreSnapshot(t *testing.T, path, dataDir string) {
	t.Helper()
	err := utlsnapshot.NewV3(zap.NewNop()).Restore(utlsnapshot.RestoreConfig{
		SnapshotPath:        path,
		Name:                "lapis",
		OutputDataDir:       filepath.Join(dataDir, "etcd"),
		PeerURLs:            []string{"http://127.0.0.1:0"},
		InitialCluster:      "lapis=http://127.0.0.1:0",
		InitialClusterToken: "etcd-cluster",
	})
	if err != nil {
		t.Fatalf("etcdutl snapshot restore: %v", err)
	}
}

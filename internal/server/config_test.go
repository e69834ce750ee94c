package server

import (
	"strings"
	"testing"
	"time"
)

// TestStorageConfig: the etcd prefix defaults to kube's; an event TTL of 0 keeps events, a
// negative one is refused.
func TestStorageConfig(t *testing.T) {
	for _, c := range []struct {
		cfg        Config
		wantPrefix string
		wantErr    string
	}{
		{Config{}, "/registry", ""},
		{Config{EtcdPrefix: "/tenant-a", EventTTL: time.Hour}, "/tenant-a", ""},
		{Config{EtcdPrefix: "/"}, "/", ""},
		{Config{EventTTL: -time.Second}, "/registry", "--event-ttl -1s must not be negative"},
	} {
		cfg := c.cfg.withDefaults()
		if cfg.EtcdPrefix != c.wantPrefix {
			t.Errorf("%+v: prefix %q, want %q", c.cfg, cfg.EtcdPrefix, c.wantPrefix)
		}
		if cfg.EventTTL != c.cfg.EventTTL {
			t.Errorf("%+v: event TTL %v", c.cfg, cfg.EventTTL)
		}
		err := cfg.validate()
		if (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.wantErr)
		}
	}
}

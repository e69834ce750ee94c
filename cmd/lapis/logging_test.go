package main

import (
	"flag"
	"log/slog"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// TestLoggingFlags checks that kube-apiserver's verbosity flag takes its usual spellings.
func TestLoggingFlags(t *testing.T) {
	for _, args := range [][]string{{"-v=3"}, {"-v", "3"}, {"--v=3"}, {"--v", "3"}} {
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		l := addLoggingFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if l.cfg.Verbosity != 3 {
			t.Errorf("%v: verbosity %d, want 3", args, l.cfg.Verbosity)
		}
	}
}

// TestKlogLevel checks that lapis's slog messages follow klog's verbosity: Debug from -v=4.
func TestKlogLevel(t *testing.T) {
	var fs flag.FlagSet
	klog.InitFlags(&fs)
	defer fs.Set("v", "0")
	for _, tc := range []struct {
		v    string
		want slog.Level
	}{{"0", slog.LevelInfo}, {"3", slog.LevelInfo}, {"4", slog.LevelDebug}, {"10", slog.LevelDebug}} {
		if err := fs.Set("v", tc.v); err != nil {
			t.Fatal(err)
		}
		if got := (klogLevel{}).Level(); got != tc.want {
			t.Errorf("-v=%s: slog level %v, want %v", tc.v, got, tc.want)
		}
	}
}

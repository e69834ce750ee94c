package replicas

import (
	"context"
	"runtime/pprof"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		stat string
		want time.Duration
		bad  bool
	}{
		{stat: "1234 (lapis) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 9 0 100 0 0", want: 2810 * time.Millisecond},
		{stat: "77 (a) b (c) R 1 77 77 0 -1 0 0 0 0 0 7 3 0 0", want: 100 * time.Millisecond},
		{stat: "77 (short) S 1", bad: true},
		{stat: "no name", bad: true},
	}
	for _, tc := range tests {
		got, err := parseStatCPU(tc.stat)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parseStatCPU(%q) = %v, %v; want %v (error %v)", tc.stat, got, err, tc.want, tc.bad)
		}
	}
}

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		stat         string
		busy, iowait time.Duration
		bad          bool
	}{
		{stat: "cpu  100 5 50 9000 20 1 2 3 0 0\ncpu0 50 2 25 4500 10 0 1 1 0 0\n", busy: 1610 * time.Millisecond, iowait: 200 * time.Millisecond},
		{stat: "cpu0 100 5 50 9000 20 1 2 3 0 0\n", bad: true},
		{stat: "cpu  1 2 3\n", bad: true},
	}
	for _, tc := range tests {
		busy, iowait, err := parseProcStat(tc.stat)
		if (err != nil) != tc.bad || busy != tc.busy || iowait != tc.iowait {
			t.Errorf("parseProcStat(%q) = %v, %v, %v; want %v, %v (error %v)", tc.stat, busy, iowait, err, tc.busy, tc.iowait, tc.bad)
		}
	}
}

// TestCPUByLabel profiles a labelled busy goroutine: its CPU time must come back under its
// label, and none under a label no goroutine has.
func TestCPUByLabel(t *testing.T) {
	p := startLabelProfile()
	if !p.on {
		t.Skip("a CPU profile is already being taken")
	}
	// Spin until the process has had 500ms of CPU (a busy machine gives it less than the wall
	// time), or 30s have passed.
	start, err := processCPU("self")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go pprof.Do(context.Background(), pprof.Labels("clients", "load"), func(context.Context) {
		defer close(done)
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
			for range 1_000_000 {
			}
			if used, err := processCPU("self"); err != nil || used-start >= 500*time.Millisecond {
				return
			}
		}
	})
	<-done
	used, _ := processCPU("self")
	split := p.stop()
	if split == nil {
		t.Fatal("no profile read")
	}
	if split["clients"] < (used-start)/2 || split["etcd"] != 0 {
		t.Errorf("CPU by label %v after %v of CPU; want most under clients, none under etcd", split, used-start)
	}
}

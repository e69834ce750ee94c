package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pidEnv names the process ID of the server a benchmark measures (set by compare.sh): its peak
// and current RSS are then reported too.
const pidEnv = "LAPIS_BENCH_PID"

// BenchmarkLargeObjects rewrites 20 ConfigMaps of 512 KB each, round robin, from 4 clients, at
// most 20 rounds (400 writes) a second, for as many rounds as the benchmark asks: the load
// under which memory must stay bounded in bytes. It reports writes/s and, when pidEnv names
// the server, its RSS at the end and at its peak (rss-mib, peak-rss-mib; VmHWM).
func BenchmarkLargeObjects(b *testing.B) {
	objects, size := 20, 512<<10
	if small() {
		objects, size = 2, 4<<10
	}
	b.Run(fmt.Sprintf("%dx%dKiB", objects, size>>10), func(b *testing.B) {
		_, cs := builtinTarget(b)
		ctx := context.Background()
		const ns = "bench-large"
		if err := ensureNS(ctx, cs, ns); err != nil {
			b.Fatal(err)
		}
		cms := cs.CoreV1().ConfigMaps(ns)
		payload := strings.Repeat("x", size-64)
		write := func(i, round int) error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("large-%02d", i)},
				Data: map[string]string{"round": strconv.Itoa(round), "payload": payload}}
			_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
			if apierrors.IsNotFound(err) {
				_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			}
			return err
		}
		tick := time.NewTicker(50 * time.Millisecond) // 20 rounds a second at most
		defer tick.Stop()
		b.ResetTimer()
		for round := 0; round < b.N; round++ {
			if err := parallel(objects, 4, func(i int) error { return write(i, round) }); err != nil {
				b.Fatal(err)
			}
			<-tick.C
		}
		b.StopTimer()
		b.ReportMetric(float64(objects*b.N)/b.Elapsed().Seconds(), "writes/s")
		reportServerRSS(b)
	})
}

// reportServerRSS reports the current and peak RSS of the process pidEnv names.
func reportServerRSS(b *testing.B) {
	pid := os.Getenv(pidEnv)
	if pid == "" {
		return
	}
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		b.Logf("reading the server's memory: %v", err)
		return
	}
	for _, line := range strings.Split(string(status), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		kib, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			b.ReportMetric(kib/1024, "rss-mib")
		case strings.HasPrefix(line, "VmHWM:"):
			b.ReportMetric(kib/1024, "peak-rss-mib")
		}
	}
}

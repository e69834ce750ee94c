package bench

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkGet: C concurrent clients GET custom resources (of BenchmarkList's smallest
// namespace) through the dynamic client, each its own objects in turn. One iteration is one GET
// per client; gets/s and per-GET latency are reported.
func BenchmarkGet(b *testing.B) {
	clients, objects := 8, 2000
	if small() {
		clients, objects = 2, 20
	}
	b.Run(fmt.Sprintf("clients-%d", clients), func(b *testing.B) {
		dyn := setup(b)
		ns := seedList(b, dyn, objects)
		ri := dyn.Resource(widgetGVR).Namespace(ns)
		ctx := context.Background()
		latencies := make([][]time.Duration, clients)
		b.ResetTimer()
		var wg sync.WaitGroup
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < b.N; i++ {
					name := fmt.Sprintf("w-%06d", (c+i*clients)%objects)
					start := time.Now()
					if _, err := ri.Get(ctx, name, metav1.GetOptions{}); err != nil {
						b.Errorf("get %s: %v", name, err)
						return
					}
					latencies[c] = append(latencies[c], time.Since(start))
				}
			}()
		}
		wg.Wait()
		b.StopTimer()
		var all []time.Duration
		for _, l := range latencies {
			all = append(all, l...)
		}
		sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
		b.ReportMetric(float64(len(all))/b.Elapsed().Seconds(), "gets/s")
		if len(all) > 0 {
			b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
		}
	})
}

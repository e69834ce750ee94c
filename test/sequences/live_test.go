package sequences

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAgainstKube runs $SEQUENCES sequences from seed $SEQUENCES_FROM on lapis and on
// kube-apiserver at once and compares every outcome; a difference is shrunk to its shortest
// sequence and reported with its seed.
func TestAgainstKube(t *testing.T) {
	if env.kube == nil {
		t.Skip(env.kubeSkip)
	}
	ctx := context.Background()
	seeds := make(chan uint64)
	var (
		mu          sync.Mutex
		differences int
		done, once  atomic.Int64
	)
	const workers, maxDifferences = 4, 10
	var wg sync.WaitGroup
	started := time.Now()
	for range workers {
		wg.Go(func() {
			for seed := range seeds {
				s := env.gen.Sequence(seed)
				d, err := Live(ctx, env.kube, env.lapis, s, s.Name)
				if err == nil && d != nil {
					d, err = Confirm(ctx, env.kube, env.lapis, d)
					if err == nil && d == nil {
						once.Add(1)
						t.Logf("seed %d: differed once, not again (the servers' clocks crossed a second apart)", seed)
					}
				}
				if err == nil && d != nil {
					d, err = Shrink(ctx, env.kube, env.lapis, d)
				}
				done.Add(1)
				mu.Lock()
				if err != nil {
					t.Errorf("seed %d: %v", seed, err)
					differences++
				} else if d != nil {
					t.Errorf("%v", d)
					differences++
				}
				mu.Unlock()
			}
		})
	}
	for seed := liveFrom; seed < liveFrom+uint64(liveCount); seed++ {
		mu.Lock()
		stop := differences >= maxDifferences
		mu.Unlock()
		if stop {
			t.Errorf("stopped after %d differences", maxDifferences)
			break
		}
		seeds <- seed
	}
	close(seeds)
	wg.Wait()
	t.Logf("%d sequences from seed %d in %v; %d differed once but not when run again", done.Load(), liveFrom, time.Since(started).Round(time.Second), once.Load())
}

// TestShow prints every outcome of seed $SEQUENCES_SHOW on both servers, for reading a
// difference step by step.
func TestShow(t *testing.T) {
	seed, err := strconv.ParseUint(os.Getenv("SEQUENCES_SHOW"), 10, 64)
	if err != nil {
		t.Skip("SEQUENCES_SHOW=SEED prints a sequence's outcomes on both servers")
	}
	if env.kube == nil {
		t.Skip(env.kubeSkip)
	}
	s := env.gen.Sequence(seed)
	for i, st := range s.Steps {
		t.Logf("step %d: %s", i, st)
	}
	for _, target := range []*Target{env.kube, env.lapis} {
		out, err := target.Run(context.Background(), s, s.Name)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range out {
			b, _ := json.Marshal(o)
			t.Logf("%s %d: %s", target.Name, i, b)
		}
	}
}

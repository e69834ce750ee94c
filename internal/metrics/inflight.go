package metrics

import (
	"sync"
	"time"

	compbasemetrics "k8s.io/component-base/metrics"
)

// The request kinds of apiserver_current_inflight_requests.
const (
	readOnlyKind = "readOnly"
	mutatingKind = "mutating"
)

// inflightCounts counts the requests being served and reports, as kube-apiserver's
// apiserver_current_inflight_requests, the most served at once in the last second: the
// high-water marks of the current and the previous one-second window.
type inflightCounts struct {
	compbasemetrics.BaseStableCollector
	desc *compbasemetrics.Desc
	now  func() time.Time

	mu          sync.Mutex
	current     [2]int // by kind: 0 read-only, 1 mutating
	windowStart time.Time
	windowMax   [2]int
	previousMax [2]int
}

func newInflightCounts(now func() time.Time) *inflightCounts {
	return &inflightCounts{
		desc: compbasemetrics.NewDesc("apiserver_current_inflight_requests",
			"Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
			[]string{"request_kind"}, nil, compbasemetrics.STABLE, ""),
		now:         now,
		windowStart: now(),
	}
}

func kindIndex(mutating bool) int {
	if mutating {
		return 1
	}
	return 0
}

// roll starts a new window when a second has passed. Callers hold mu.
func (c *inflightCounts) roll() {
	now := c.now()
	switch elapsed := now.Sub(c.windowStart); {
	case elapsed < time.Second:
		return
	case elapsed < 2*time.Second:
		c.previousMax = c.windowMax
	default:
		c.previousMax = c.current // a whole second passed without a change
	}
	c.windowStart, c.windowMax = now, c.current
}

func (c *inflightCounts) add(mutating bool, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roll()
	k := kindIndex(mutating)
	c.current[k] += n
	c.windowMax[k] = max(c.windowMax[k], c.current[k])
}

// highWater returns the most requests of each kind served at once in the last second.
func (c *inflightCounts) highWater() (readOnly, mutating int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roll()
	return max(c.windowMax[0], c.previousMax[0]), max(c.windowMax[1], c.previousMax[1])
}

func (c *inflightCounts) DescribeWithStability(ch chan<- *compbasemetrics.Desc) { ch <- c.desc }

func (c *inflightCounts) CollectWithStability(ch chan<- compbasemetrics.Metric) {
	readOnly, mutating := c.highWater()
	ch <- compbasemetrics.NewLazyConstMetric(c.desc, compbasemetrics.GaugeValue, float64(mutating), mutatingKind)
	ch <- compbasemetrics.NewLazyConstMetric(c.desc, compbasemetrics.GaugeValue, float64(readOnly), readOnlyKind)
}

package aggregation

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Timeouts of the waits for a server to reach a state: kube has settleTimeout; lapis has as
// long as kube took plus lapisGrace, so that a lapis that never gets there fails each step in
// seconds rather than minutes.
const (
	settleTimeout = 120 * time.Second
	lapisGrace    = 20 * time.Second
	pollInterval  = 500 * time.Millisecond
)

// masking is a value one server has and the other has differently: its sample-apiserver's
// port, its own address, the caBundle of its sample-apiserver.
type masking struct{ value, with string }

// masksOf is what differs by design on s: the ports and CA bundle of its sample-apiserver
// (registered as reg), and its own address.
func masksOf(s *target, reg *registration) []masking {
	m := []masking{{strings.TrimPrefix(s.config.Host, "https://"), "APISERVER"}}
	if reg.port != 0 {
		m = append(m, masking{strconv.Itoa(reg.port), "SAMPLE_PORT"})
	}
	if len(reg.caBundle) > 0 {
		m = append(m, masking{base64.StdEncoding.EncodeToString(reg.caBundle), "CA_BUNDLE"})
	}
	return m
}

// Values that differ between two servers given the same requests.
var normalizations = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "UID"},
	{regexp.MustCompile(`("resourceVersion": ?)"\d+"`), `${1}"RV"`},
	{regexp.MustCompile(`(resourceVersion: ?)"?\d+"?`), `${1}RV`},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "TIME"},
	// kubectl's AGE column
	{regexp.MustCompile(`(?m)  +\d+(ms|s|m|h|d)(\d+(s|m|h))?$`), "  AGE"},
	// an OpenAPI v3 document's address carries a hash of its content
	{regexp.MustCompile(`\?hash=[0-9A-F]+`), "?hash=HASH"},
}

// mask hides in s what differs by design: the masks' values (as whole words) and the
// normalizations.
func mask(s string, masks []masking) string {
	for _, m := range masks {
		s = wholeWord(m.value).ReplaceAllString(s, m.with)
	}
	for _, n := range normalizations {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

// wholeWord matches value where it is not part of a longer word (a port within a longer
// number); \b is only asserted at ends that are word characters (a base64 value ends in =).
func wholeWord(value string) *regexp.Regexp {
	re := regexp.QuoteMeta(value)
	isWord := regexp.MustCompile(`^\w$`)
	if value != "" && isWord.MatchString(value[:1]) {
		re = `\b` + re
	}
	if value != "" && isWord.MatchString(value[len(value)-1:]) {
		re += `\b`
	}
	return regexp.MustCompile(re)
}

// canonicalJSON is b indented with sorted keys (one value a line, for line differences), or
// b as it is when it is not JSON.
func canonicalJSON(b []byte) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return string(bytes.TrimSpace(b))
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return string(out)
}

// settled is what a server last answered while a test waited for a state.
type settled struct {
	answer string
	ready  bool // it reached the state
	waited time.Duration
}

// probe asks one server once: its answer, masked, and whether it is in the state waited for.
type probe func(ctx context.Context, s *side) (answer string, ready bool)

// settleBoth asks kube and lapis at once, each until it is ready (kube within settleTimeout,
// lapis until lapisGrace after kube is done), and returns their last answers.
func settleBoth(ctx context.Context, kube, lapis *side, p probe) (k, l settled) {
	kubeDone := make(chan struct{})
	var kubeEnd time.Time
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		start := time.Now()
		k = settle(ctx, kube, p, func() bool { return time.Since(start) > settleTimeout })
		kubeEnd = time.Now()
		close(kubeDone)
	}()
	go func() {
		defer wg.Done()
		l = settle(ctx, lapis, p, func() bool {
			select {
			case <-kubeDone:
				return time.Since(kubeEnd) > lapisGrace
			default:
				return false
			}
		})
	}()
	wg.Wait()
	return k, l
}

// settle polls s with p until it is ready, ctx ends or expired says so.
func settle(ctx context.Context, s *side, p probe, expired func() bool) settled {
	start := time.Now()
	var st settled
	for {
		st.answer, st.ready = p(ctx, s)
		st.waited = time.Since(start)
		if st.ready || expired() {
			return st
		}
		select {
		case <-ctx.Done():
			return st
		case <-time.After(pollInterval):
		}
	}
}

// expectSame fails t when kube or lapis did not reach the state (what), or when their answers
// differ, showing where.
func expectSame(t *testing.T, what string, k, l settled) {
	t.Helper()
	if !k.ready {
		t.Errorf("kube: %s: not reached in %v (the test's expectation of kube is wrong?); last answer:\n%s", what, k.waited.Round(time.Second), head(k.answer))
	}
	if !l.ready {
		t.Errorf("lapis: %s: not reached in %v (kube: in %v); last answer:\n%s", what, l.waited.Round(time.Second), k.waited.Round(time.Second), head(l.answer))
	}
	if k.answer != l.answer {
		t.Errorf("%s: lapis answers differently from kube; %s", what, difference(k.answer, l.answer))
	}
}

// difference shows the first line where kube's and lapis's answers differ, with context, then
// both answers whole when they are short.
func difference(kube, lapis string) string {
	kl, ll := strings.Split(kube, "\n"), strings.Split(lapis, "\n")
	i := 0
	for i < len(kl) && i < len(ll) && kl[i] == ll[i] {
		i++
	}
	from := max(i-3, 0)
	var b strings.Builder
	fmt.Fprintf(&b, "first difference at line %d:\n", i+1)
	for _, side := range []struct {
		name  string
		lines []string
	}{{"kube", kl}, {"lapis", ll}} {
		to := min(i+4, len(side.lines))
		fmt.Fprintf(&b, "  %s:\n", side.name)
		for j := from; j < to; j++ {
			marker := "   "
			if j == i {
				marker = " > "
			}
			fmt.Fprintf(&b, "    %s%s\n", marker, side.lines[j])
		}
		if i >= len(side.lines) {
			b.WriteString("     (end)\n")
		}
	}
	if len(kl)+len(ll) <= 60 {
		fmt.Fprintf(&b, "kube, whole:\n%s\nlapis, whole:\n%s", kube, lapis)
	}
	return b.String()
}

// head is the first lines of s, for a message that shows the difference besides.
func head(s string) string {
	const n = 25
	lines := strings.Split(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n… (%d more lines)", len(lines)-n)
}

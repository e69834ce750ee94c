package aggregation

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// The masks hide what must differ and nothing else: a comparison must fail when the answers
// differ in anything else.
func TestMask(t *testing.T) {
	masks := []masking{{"127.0.0.1:40123", "APISERVER"}, {"41234", "SAMPLE_PORT"}, {"LS0tQ0E=", "CA_BUNDLE"}}
	for _, c := range []struct {
		name, a, b string
		same       bool
	}{
		{"uid", `"uid":"0b5cf0a6-8a5a-4d2e-9f55-1d5e3c3a2b10"`, `"uid":"d1a7e4c2-6b0e-4a8e-b1b2-7f5c9e0a1b2c"`, true},
		{"resourceVersion", `"resourceVersion":"12"`, `"resourceVersion":"873"`, true},
		{"time", `"lastTransitionTime":"2026-12-02T11:43:55Z"`, `"lastTransitionTime":"2026-12-02T11:44:03Z"`, true},
		{"sample port", `"port": 41234`, `"port": SAMPLE_PORT`, true},
		{"a longer number holding the port", `"generation": 412345`, `"generation": 412346`, false},
		{"caBundle", `"caBundle":"LS0tQ0E="`, `"caBundle":"CA_BUNDLE"`, true},
		{"kubectl AGE", "v1alpha1.wardle.example.com   True   5s", "v1alpha1.wardle.example.com   True   2m3s", true},
		{"condition status", `"status":"True"`, `"status":"False"`, false},
		{"reason", `"reason":"Passed"`, `"reason":"FailedDiscoveryCheck"`, false},
		{"message", `"message":"all checks passed"`, `"message":"service unavailable"`, false},
		{"code", `403 application/json`, `404 application/json`, false},
		{"freshness", `"freshness": "Stale"`, `"freshness": "Current"`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ma, mb := mask(c.a, masks), mask(c.b, masks)
			if (ma == mb) != c.same {
				t.Errorf("masked %q and %q: %q, %q; want same=%v", c.a, c.b, ma, mb, c.same)
			}
		})
	}
}

func TestDifference(t *testing.T) {
	d := difference("a\nb\nc", "a\nB\nc")
	for _, want := range []string{"first difference at line 2", " > b", " > B"} {
		if !strings.Contains(d, want) {
			t.Errorf("difference lacks %q:\n%s", want, d)
		}
	}
	if d := difference("a\nb", "a"); !strings.Contains(d, "(end)") {
		t.Errorf("a shorter lapis answer is not shown ending:\n%s", d)
	}
}

// steady is ready only on the second same ready answer in a row.
func TestSteady(t *testing.T) {
	answers := []struct {
		answer string
		ready  bool
	}{{"a", true}, {"b", true}, {"b", false}, {"b", true}, {"b", true}}
	want := []bool{false, false, false, false, true}
	i := 0
	p := steady(func(context.Context, *side) (string, bool) { a := answers[i]; i++; return a.answer, a.ready })
	s := &side{}
	for n, w := range want {
		if _, got := p(context.Background(), s); got != w {
			t.Errorf("answer %d: ready %v, want %v", n, got, w)
		}
	}
}

func TestGroupsAnswer(t *testing.T) {
	current := json.RawMessage(`{"metadata":{"name":"wardle.example.com"},"versions":[{"version":"v1alpha1"}]}`)
	stale := json.RawMessage(`{"metadata":{"name":"wardle.example.com"},"versions":[{"version":"v1alpha1","freshness":"Stale"}]}`)
	apps := json.RawMessage(`{"metadata":{"name":"apps"}}`)
	s := &side{}
	for _, c := range []struct {
		name      string
		groups    []json.RawMessage
		freshness string
		ready     bool
	}{
		{"listed", []json.RawMessage{apps, current}, "", true},
		{"absent", []json.RawMessage{apps}, "", false},
		{"current, absent freshness", []json.RawMessage{apps, current}, "Current", true},
		{"stale wanted", []json.RawMessage{apps, current}, "Stale", false},
		{"stale", []json.RawMessage{apps, stale}, "Stale", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			answer, ready := groupsAnswer(c.groups, s, c.freshness)
			if ready != c.ready {
				t.Errorf("ready %v, want %v; answer:\n%s", ready, c.ready, answer)
			}
		})
	}
}

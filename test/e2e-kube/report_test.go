package e2ekube

import (
	"context"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// junit is a JUnit report as the e2e framework writes it (junit_01.xml): ginkgo's testcases,
// those the label filter left out included, with the failure text in the element's body.
func junit(cases ...string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<testsuites><testsuite name="Kubernetes e2e suite">` + strings.Join(cases, "\n") + `</testsuite></testsuites>`
}

func tc(name, status, time, body string) string {
	return `<testcase name="` + name + `" classname="Kubernetes e2e suite" status="` + status + `" time="` + time + `">` + body + `</testcase>`
}

func TestReport(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not on PATH: report.py cannot run")
	}
	filtered := tc("[It] [sig-node] other", "skipped", "0", `<skipped message="skipped"></skipped>`)
	setup := tc("[SynchronizedBeforeSuite]", "passed", "0.1", "")
	report := tc("[ReportBeforeSuite]", "passed", "0", "")
	failed := func(name, msg string) string {
		return tc(name, "failed", "3", `<failure type="failed">`+html.EscapeString("[FAILED] "+msg+"\nIn [It] at: x.go:1\n")+`</failure>`)
	}
	tests := []struct {
		name        string
		kube, lapis string
		summary     []string // lines summary.txt must contain
		list        []string // lines kube-pass-lapis-fail.txt must contain
		notInList   []string
	}{{
		name:  "filtered specs and suite nodes are not counted",
		kube:  junit(filtered, setup, report, tc("[It] a", "passed", "1", "")),
		lapis: junit(filtered, setup, report, tc("[It] a", "passed", "1", "")),
		summary: []string{"kube   1 specs: 1 passed, 0 failed, 0 skipped", "lapis  1 specs: 1 passed, 0 failed, 0 skipped",
			"passed: kube 1, lapis 1, difference 0"},
	}, {
		name:    "a spec skipped at run time counts as skipped",
		kube:    junit(tc("[It] a", "skipped", "0.2", `<skipped message="skipped - needs nodes"></skipped>`)),
		lapis:   junit(tc("[It] a", "skipped", "0.2", `<skipped message="skipped - needs nodes"></skipped>`)),
		summary: []string{"kube   1 specs: 0 passed, 0 failed, 1 skipped"},
	}, {
		name:      "passes on kube, fails on lapis: listed with lapis's message",
		kube:      junit(tc("[It] a", "passed", "1", ""), tc("[It] b", "passed", "1", ""), failed("[It] c", "kube's own")),
		lapis:     junit(failed("[It] a", "expected 404, got 422"), tc("[It] b", "passed", "1", ""), failed("[It] c", "lapis too")),
		summary:   []string{"lapis  3 specs: 1 passed, 2 failed, 0 skipped", "passed: kube 2, lapis 1, difference 1; 1 pass on kube and fail on lapis"},
		list:      []string{"- [It] a", "    [FAILED] expected 404, got 422", "    In [It] at: x.go:1"},
		notInList: []string{"[It] b", "[It] c"},
	}, {
		name:    "timed out counts as failed; passes on lapis only are named",
		kube:    junit(tc("[It] a", "timedout", "300", `<failure type="timedout">[TIMEDOUT] slow</failure>`)),
		lapis:   junit(tc("[It] a", "passed", "1", "")),
		summary: []string{"kube   1 specs: 0 passed, 1 failed", "passes on lapis, fails on kube: [It] a"},
	}, {
		name: "a dumped object is folded so that the expectation shows",
		kube: junit(tc("[It] a", "passed", "1", "")),
		lapis: junit(failed("[It] a", "Timed out after 300s.\nExpected:\n    <*v1.ResourceQuota>:\n"+
			strings.Repeat("        status: {}\n", 200)+"to have the following .status.used entries:\n    resourcequotas: \"1\"")),
		list: []string{"        ... (199 more lines)", "    to have the following .status.used entries:", `        resourcequotas: "1"`},
	}, {
		name:    "a failed suite node is reported",
		kube:    junit(tc("[It] a", "passed", "1", "")),
		lapis:   junit(tc("[SynchronizedBeforeSuite]", "failed", "1", `<failure type="failed">[FAILED] no kubernetes Service</failure>`), failed("[It] a", "setup failed")),
		summary: []string{"suite node failed: [SynchronizedBeforeSuite]: [FAILED] no kubernetes Service"},
		list:    []string{"- [It] a"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			for target, xml := range map[string]string{"kube": tt.kube, "lapis": tt.lapis} {
				if err := os.MkdirAll(filepath.Join(out, target), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(out, target, "junit_01.xml"), []byte(xml), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.CommandContext(context.Background(), "python3", "report.py", out)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("report.py: %v\n%s", err, b)
			}
			summary := read(t, filepath.Join(out, "summary.txt"))
			for _, want := range tt.summary {
				if !strings.Contains(summary, want) {
					t.Errorf("summary.txt lacks %q:\n%s", want, summary)
				}
			}
			list := read(t, filepath.Join(out, "kube-pass-lapis-fail.txt"))
			for _, want := range tt.list {
				if !strings.Contains(list, want+"\n") {
					t.Errorf("kube-pass-lapis-fail.txt lacks %q:\n%s", want, list)
				}
			}
			for _, not := range tt.notInList {
				if strings.Contains(list, not) {
					t.Errorf("kube-pass-lapis-fail.txt names %q:\n%s", not, list)
				}
			}
		})
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

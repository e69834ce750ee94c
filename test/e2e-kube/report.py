#!/usr/bin/env python3
"""report.py OUT: compares the e2e runs in OUT/<target>/junit_01.xml (run.sh's output).

Writes and prints OUT/summary.txt (passed/failed/skipped of each server, and the wall time of its
run) and OUT/kube-pass-lapis-fail.txt (every spec that passes on kube and fails on lapis, with the
first lines of lapis's failure message).

A spec of the selection is a JUnit testcase other than one ginkgo left out by the label filter
(state skipped, message exactly "skipped", no run time); the suite's set-up and tear-down nodes
([SynchronizedBeforeSuite], [ReportAfterSuite] ...) are not specs, but a failing one is reported, since it fails every
spec after it.
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

FAILED = {"failed", "timedout", "interrupted", "aborted", "panicked"}
FIRST_LINES = 8


def load(path):
    """{spec name: (state, failure text)} of one JUnit report, and the failed suite nodes."""
    specs, suite_failures = {}, []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        state = case.get("status", "")
        text = ""
        for tag in ("failure", "error"):
            el = case.find(tag)
            if el is not None:
                text = (el.text or "") or el.get("message", "")
        skipped = case.find("skipped")
        if skipped is not None and not state:
            state = "skipped"
        if state == "skipped" and skipped is not None and skipped.get("message") == "skipped" \
                and float(case.get("time", "0") or 0) == 0:
            continue  # left out by the label filter
        if re.match(r"^\[(Synchronized|Report)?(Before|After)Suite\]|^\[DeferCleanup", name):
            if state in FAILED:
                suite_failures.append((name, text))
            continue
        specs[name] = (state, text)
    return specs, suite_failures


def first_lines(text, n=FIRST_LINES):
    """The message's first n lines, a dumped object (4 or more lines indented 8 spaces or more,
    as gomega prints one) folded into one line, so that what was expected of it shows."""
    lines, run = [], []
    for l in [l.rstrip() for l in text.strip().splitlines() if l.strip()] + [""]:
        if l.startswith(" " * 8):
            run.append(l)
            continue
        lines.extend(run if len(run) < 4 else [run[0], f"        ... ({len(run) - 1} more lines)"])
        run = []
        if l:
            lines.append(l)
    return lines[:n]


def counts(specs):
    c = {"passed": 0, "failed": 0, "skipped": 0}
    for state, _ in specs.values():
        if state == "passed":
            c["passed"] += 1
        elif state in FAILED:
            c["failed"] += 1
        else:
            c["skipped"] += 1
    return c


def main():
    out = sys.argv[1]
    runs = {}
    summary = []
    for target in ("kube", "lapis"):
        path = os.path.join(out, target, "junit_01.xml")
        if not os.path.exists(path):
            summary.append(f"{target:6} no report ({path} missing)")
            continue
        specs, suite_failures = load(path)
        runs[target] = specs
        c = counts(specs)
        secs = ""
        sp = os.path.join(out, target, "seconds")
        if os.path.exists(sp):
            secs = f", {int(open(sp).read().strip())} s"
        summary.append(f"{target:6} {len(specs)} specs: {c['passed']} passed, {c['failed']} failed, "
                       f"{c['skipped']} skipped{secs}")
        for name, text in suite_failures:
            summary.append(f"       suite node failed: {name}: " + " | ".join(first_lines(text, 3)))

    lines = []
    if "kube" in runs and "lapis" in runs:
        kube, lapis = runs["kube"], runs["lapis"]
        worse = sorted(n for n, (s, _) in kube.items() if s == "passed" and lapis.get(n, ("absent", ""))[0] in FAILED)
        better = sorted(n for n, (s, _) in lapis.items() if s == "passed" and kube.get(n, ("absent", ""))[0] in FAILED)
        kp = sum(1 for s, _ in kube.values() if s == "passed")
        lp = sum(1 for s, _ in lapis.values() if s == "passed")
        summary.append(f"passed: kube {kp}, lapis {lp}, difference {kp - lp}; "
                       f"{len(worse)} pass on kube and fail on lapis, {len(better)} pass on lapis and fail on kube")
        for n in better:
            summary.append(f"  passes on lapis, fails on kube: {n}")
        for n in worse:
            lines.append(f"- {n}")
            lines.extend("    " + l for l in first_lines(lapis[n][1]))
        with open(os.path.join(out, "kube-pass-lapis-fail.txt"), "w") as f:
            f.write("\n".join(lines) + ("\n" if lines else ""))

    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(summary) + "\n")
    print("\n".join(summary))
    if lines:
        print(f"\nPass on kube, fail on lapis ({os.path.join(out, 'kube-pass-lapis-fail.txt')}):")
        print("\n".join(lines))


if __name__ == "__main__":
    main()

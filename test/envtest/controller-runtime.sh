#!/usr/bin/env bash
# controller-runtime.sh runs controller-runtime v0.25.2's own envtest-based test suites
# (pkg/client, pkg/cache, pkg/controller, pkg/builder, pkg/manager, pkg/envtest, pkg/webhook,
# each with its subpackages) twice: with KUBEBUILDER_ASSETS pointing at lapis
# (`lapis envtest-assets DIR`), then at kube's real binaries, and prints a table of the specs
# passed/failed/skipped on each and the seconds each suite took, then the specs that pass on
# kube-apiserver and fail on lapis.
#
#   test/envtest/controller-runtime.sh [SUITE...]           # SUITE: envtest, builder, client, cache, ...
#   test/envtest/controller-runtime.sh --report [SUITE...]  # reprint the table of the last run
#
# It copies controller-runtime's source from the Go module cache (downloading it with
# `go mod download` if absent) into $CR_WORK (default /tmp/lapis-controller-runtime; kept between
# runs so that compiled test binaries are reused — CR_REBUILD=1 recompiles them), builds lapis
# (`go build ./cmd/lapis`), compiles each test package once (`go test -c`) and runs the binaries
# one at a time, in their package directory, with -ginkgo.json-report. A spec is a Ginkgo It
# (from those reports; pending Its count as skipped) or a leaf Go test of the package (a test
# or subtest without subtests, other than the Go tests that run a Ginkgo suite). The seconds
# are the wall time of a suite's test binaries (compilation excluded), envtest's start and stop
# of the control plane included (several per suite).
#
# kube's binaries: kube-apiserver from $KUBE_REFERENCE_DIR (default
# ~/.cache/kube-reference/v1.37.2, built by ../shared/reference/kube-reference), etcd from PATH
# (the one kube-reference uses), kubectl from PATH (else lapis's). When kube-apiserver or etcd is
# absent the script says so and runs lapis only. CR_TARGETS="lapis" (or "kube") runs one side.
#
# envtest waits 20 s by default for each binary to start; on a loaded machine kube-apiserver can
# take longer, so the script sets KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=120s (both sides alike)
# unless it is set already. Each package's binary runs with -test.timeout=$CR_TIMEOUT (30m).
# Logs and reports: $CR_WORK/out/<target>/<package>.{log,json}; the table: $CR_WORK/out/table.md.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
version=v0.25.2
work=${CR_WORK:-/tmp/lapis-controller-runtime}
kubedir=${KUBE_REFERENCE_DIR:-$HOME/.cache/kube-reference/v1.37.2}
timeout=${CR_TIMEOUT:-30m}
export KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=${KUBEBUILDER_CONTROLPLANE_START_TIMEOUT:-120s}
export GOFLAGS=${GOFLAGS:--mod=mod} GOWORK=off
out=$work/out
report_only=
if [ "${1:-}" = --report ]; then report_only=1; shift; fi
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(envtest builder client cache controller manager webhook)

# report prints the table from $out, then the specs that pass on kube-apiserver and fail on
# lapis. A spec is a Ginkgo It, or a leaf Go test (a test without subtests) other than the Go
# tests that run a Ginkgo suite; pending Its count as skipped; a test binary that failed without
# a failing test (a panic, a timeout) counts as one failure.
report() {
  python3 - "$out" "${suites[@]}" <<'PY'
import json, os, re, sys
out, suites = sys.argv[1], sys.argv[2:]

def package(t, name):
    """{spec: state} of one package's run on target t, or None when it did not run."""
    log = os.path.join(out, t, name + ".log")
    if not os.path.exists(log):
        return None
    res = {}
    rep = os.path.join(out, t, name + ".json")
    if os.path.exists(rep) and os.path.getsize(rep) > 0:
        for suite in json.load(open(rep)):
            for r in suite.get("SpecReports") or []:
                if r.get("LeafNodeType") != "It":
                    continue
                st = r["State"]
                st = st if st in ("passed", "skipped") else "skipped" if st == "pending" else "failed"
                res[" > ".join((r.get("ContainerHierarchyTexts") or []) + [r["LeafNodeText"]])] = st
    text = open(log, errors="replace").read()
    runners, cur = set(), None
    for line in text.splitlines():
        m = re.match(r"=== RUN\s+(\S+)$", line)
        if m and "/" not in m.group(1):
            cur = m.group(1)
        elif line.startswith("Running Suite:") and cur:
            runners.add(cur)
    tests = {}
    for m in re.finditer(r"(?m)^\s*--- (PASS|FAIL|SKIP): (\S+)", text):
        tests[m.group(2)] = {"PASS": "passed", "FAIL": "failed", "SKIP": "skipped"}[m.group(1)]
    for n, st in tests.items():
        if n.split("/")[0] in runners or any(o.startswith(n + "/") for o in tests):
            continue
        res["go test " + n] = st
    if not re.search(r"(?m)^(PASS|ok)\b", text) and "failed" not in res.values():
        res["(the test binary failed: see " + log + ")"] = "failed"
    return res

targets = ["lapis", "kube"]
print("| suite | lapis passed / failed / skipped | kube-apiserver passed / failed / skipped | seconds on lapis | seconds on kube-apiserver |")
print("|---|---|---|---|---|")
regress, total = [], {t: [0, 0, 0] for t in targets}
for suite in suites:
    names = sorted({f[:-4] for t in targets if os.path.isdir(os.path.join(out, t))
                    for f in os.listdir(os.path.join(out, t))
                    if f.endswith(".log") and (f[:-4] == "pkg_" + suite or f.startswith("pkg_" + suite + "_"))})
    row, runs = ["pkg/" + suite], {}
    for t in targets:
        runs[t] = {n: package(t, n) for n in names}
        got = [r for r in runs[t].values() if r is not None]
        if not got:
            row.append("–")
            continue
        states = [s for r in got for s in r.values()]
        c = [states.count(s) for s in ("passed", "failed", "skipped")]
        total[t] = [a + b for a, b in zip(total[t], c)]
        row.append(" / ".join(map(str, c)))
    for t in targets:
        f = os.path.join(out, t, "pkg_" + suite + ".secs")
        row.append("%.0f" % float(open(f).read()) if os.path.exists(f) else "–")
    print("| " + " | ".join(row) + " |")
    for n in names:
        k, l = runs["kube"].get(n), runs["lapis"].get(n)
        if k and l:
            pkg = "pkg/" + suite + n[len("pkg_" + suite):].replace("_", "/")
            regress += [pkg + ": " + s for s, st in l.items() if st == "failed" and k.get(s) == "passed"]
ran = {t: os.path.isdir(os.path.join(out, t)) for t in targets}
print("| total | " + " | ".join(" / ".join(map(str, total[t])) if ran[t] else "–" for t in targets) + " | | |")
if os.path.isdir(os.path.join(out, "kube")) and os.path.isdir(os.path.join(out, "lapis")):
    print("\nspecs that pass on kube-apiserver and fail on lapis: %d" % len(regress))
    for r in regress:
        print("  " + r)
PY
}

if [ -n "$report_only" ]; then report | tee "$out/table.md"; exit; fi

mkdir -p "$work"
src=$work/src
if [ ! -f "$src/go.mod" ]; then
  modcache=$(go env GOMODCACHE)
  if [ ! -d "$modcache/sigs.k8s.io/controller-runtime@$version" ]; then
    (cd "$repo" && go mod download sigs.k8s.io/controller-runtime@$version)
  fi
  rm -rf "$src.tmp"
  cp -r "$modcache/sigs.k8s.io/controller-runtime@$version" "$src.tmp"
  chmod -R u+w "$src.tmp"
  mv "$src.tmp" "$src"
fi
(cd "$src" && go mod download)

echo "building lapis" >&2
(cd "$repo" && go build -o "$work/lapis" ./cmd/lapis)
rm -rf "$work/assets/lapis"
"$work/lapis" envtest-assets "$work/assets/lapis"

targets=(${CR_TARGETS:-lapis kube})
if [[ " ${targets[*]} " == *" kube "* ]]; then
  etcd=$(command -v etcd || true)
  if [ ! -x "$kubedir/kube-apiserver" ] || [ -z "$etcd" ]; then
    echo "kube's binaries are absent (kube-apiserver in $kubedir: $([ -x "$kubedir/kube-apiserver" ] && echo yes || echo no); etcd on PATH: ${etcd:-no}); build them with ../shared/reference/kube-reference start; running lapis only" >&2
    targets=(${targets[@]/kube})
  else
    rm -rf "$work/assets/kube"; mkdir -p "$work/assets/kube"
    ln -s "$kubedir/kube-apiserver" "$work/assets/kube/kube-apiserver"
    ln -s "$etcd" "$work/assets/kube/etcd"
    ln -s "$(command -v kubectl || echo "$work/assets/lapis/kubectl")" "$work/assets/kube/kubectl"
  fi
fi

mkdir -p "$work/bin"
for suite in "${suites[@]}"; do
  pkgs=$(cd "$src" && go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.Dir}}{{end}}' "./pkg/$suite/...")
  for dir in $pkgs; do
    rel=${dir#"$src"/}
    name=${rel//\//_}
    if [ ! -x "$work/bin/$name.test" ] || [ -n "${CR_REBUILD:-}" ]; then
      echo "compiling $rel" >&2
      (cd "$src" && go test -c -o "$work/bin/$name.test" "./$rel")
    fi
  done
  for t in "${targets[@]}"; do
    mkdir -p "$out/$t"
    start=$(date +%s.%N)
    for dir in $pkgs; do
      rel=${dir#"$src"/}
      name=${rel//\//_}
      rm -f "$out/$t/$name.json"
      echo "running $rel against $t" >&2
      (cd "$dir" && KUBEBUILDER_ASSETS=$work/assets/$t "$work/bin/$name.test" -test.v -test.count=1 \
        -test.timeout="$timeout" -ginkgo.json-report="$out/$t/$name.json" >"$out/$t/$name.log" 2>&1) || true
    done
    echo "$(date +%s.%N) - $start" | bc >"$out/$t/pkg_$suite.secs"
  done
done

report | tee "$out/table.md"

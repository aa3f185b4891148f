#!/usr/bin/env bash
# Copyright The meshinit Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# Where make test's time goes, per package: compiling (what the Go build
# cache does not hold yet), linking its test binary, and running it, as wall
# time and CPU time (user+sys, children included: the kube-apiservers and
# etcds a package starts), with the load average at each run.
# docs/development.md holds the figures and how they were taken.
#
#   make test-timings    (hack/test-timings.sh [package...]; default: make test's packages)
#
# Run through make, so that it builds with make test's flags (CGO_ENABLED=0,
# -trimpath) and so from the same build cache.
#
# It builds the test binaries one by one with go test -c (go's
# -debug-actiongraph gives each compile and link action its start and end;
# the first package to need a dependency pays for compiling it), then runs
# them one at a time, each in its package directory as go test does, so one
# package's run is not slowed by another's. CPU time is the robust figure on
# a shared machine; wall time depends on the load. GOCACHE=<an empty
# directory> measures a cold build. TIMINGS_RUN=no builds only (then the
# per-package run times are go test's own "ok package Ns" lines of a make
# test, where packages run beside each other as make test runs them).
{ # read whole before running
set -euo pipefail
GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
list=(./...)
(($# == 0)) || list=("$@")
mapfile -t pkgs < <("$GO" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' "${list[@]}" |
	grep -v '^github.com/meshinit/meshinit/e2e\(/\|$\)')
export KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS:-${MESHINIT_CACHE:-/var/cache/meshinit}/kubernetes-v1.37.2/bin}

# Sums one go command's action graph: the compiles that ran (not cached),
# and the links.
cat >"$out/actions.py" <<'PY'
import json, sys
from datetime import datetime
def t(s):
    main, _, frac = s.rstrip("Z").partition(".")
    return datetime.fromisoformat(main).timestamp() + float("0." + (frac or "0")[:6])
comp = link = 0.0
for a in json.load(open(sys.argv[1])):
    if a.get("TimeStart") and a.get("Cmd"):  # ran, not cached
        d = t(a["TimeDone"]) - t(a["TimeStart"])
        if a["Mode"] == "build":
            comp += d
        elif a["Mode"] == "link":
            link += d
print(f"{comp:.1f}\t{link:.1f}")
PY

echo "building ${#pkgs[@]} test binaries one by one (load $(cut -d' ' -f1-3 /proc/loadavg))..." >&2
start=$SECONDS
mkdir -p "$out/bin"
: >"$out/build.tsv"
for pkg in "${pkgs[@]}"; do
	bin="$out/bin/$(echo "${pkg#github.com/meshinit/meshinit/}" | tr / _).test"
	/usr/bin/time -f "%e %U %S" -o "$out/build.time" "$GO" test -c -o "$bin" -debug-actiongraph="$out/actions.json" "$pkg" >&2
	read -r bwall buser bsys <"$out/build.time"
	printf '%s\t%s\t%s\t%s\t%s\n' "$pkg" "$bin" "$(python3 "$out/actions.py" "$out/actions.json")" "$bwall" "$(echo "$buser + $bsys" | bc)" >>"$out/build.tsv"
done

if [[ "${TIMINGS_RUN:-yes}" == no ]]; then
	printf '%-34s %8s %8s %9s %9s\n' package compile link build "build CPU"
	total_b=0 total_bcpu=0
	while IFS=$'\t' read -r pkg bin comp lnk bwall bcpu; do
		printf '%-34s %7ss %7ss %8ss %8ss\n' "${pkg#github.com/meshinit/meshinit/}" "$comp" "$lnk" "$bwall" "$bcpu"
		total_b=$(echo "$total_b + $bwall" | bc) total_bcpu=$(echo "$total_bcpu + $bcpu" | bc)
	done <"$out/build.tsv"
	printf '%-34s %8s %8s %8ss %8ss\n' "all, one after another" "" "" "$total_b" "$total_bcpu"
	echo "compile, link: the wall time of the go actions that ran (not cached), summed (they overlap on $(nproc) cores);" \
		"build: go test -c's wall and CPU time. $((SECONDS - start))s in all; load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
	exit
fi
printf '%-34s %8s %8s %9s %9s %9s %9s %s\n' package compile link build "build CPU" run "run CPU" "load at run"
total_b=0 total_bcpu=0 total_wall=0 total_cpu=0
while IFS=$'\t' read -r pkg bin comp lnk bwall bcpu; do
	name=${pkg#github.com/meshinit/meshinit/}
	dir=$("$GO" list -f '{{.Dir}}' "$pkg")
	load=$(cut -d' ' -f1 /proc/loadavg)
	status=ok
	(cd "$dir" && /usr/bin/time -f "%e %U %S" -o "$out/run.time" "$bin" -test.count=1 -test.timeout=30m >"$out/run.log" 2>&1) || status=FAILED
	read -r wall user sys <"$out/run.time"
	cpu=$(echo "$user + $sys" | bc)
	total_b=$(echo "$total_b + $bwall" | bc) total_bcpu=$(echo "$total_bcpu + $bcpu" | bc)
	total_wall=$(echo "$total_wall + $wall" | bc) total_cpu=$(echo "$total_cpu + $cpu" | bc)
	printf '%-34s %7ss %7ss %8ss %8ss %8ss %8ss %s %s\n' "$name" "$comp" "$lnk" "$bwall" "$bcpu" "$wall" "$cpu" "$load" "${status/ok/}"
	[[ $status == ok ]] || tail -20 "$out/run.log" >&2
done <"$out/build.tsv"
printf '%-34s %8s %8s %8ss %8ss %8ss %8ss\n' "all, one after another" "" "" "$total_b" "$total_bcpu" "$total_wall" "$total_cpu"
echo "compile, link: the wall time of the go actions that ran (not cached), summed (they overlap on $(nproc) cores);" \
	"build: go test -c's wall and CPU time; run: the test binary's. $((SECONDS - start))s in all; load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
exit
}

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

# Runs test binaries that `go test -c -o DIR/ PACKAGE...` compiled, as go
# test would run them: each in its package's directory, up to $(nproc) at a
# time, a line "ok|FAIL package seconds" for each (its output too when it
# fails), and a non-zero exit when one failed. make test-matrix compiles its
# packages once and runs them against every version with this, instead of
# go test linking each package's test binary again per version.
#
#   hack/run-test-binaries.sh DIR [test flag...] -- PACKAGE...
{ # read whole before running
set -uo pipefail
GO=${GO:-go}
dir=$(cd "$1" && pwd) || exit 2
shift
flags=()
while (($#)) && [[ "$1" != -- ]]; do flags+=("$1") && shift; done
shift || { echo "usage: $0 DIR [test flag...] -- PACKAGE..." >&2; exit 2; }

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
mapfile -t pkgs < <("$GO" list -f '{{.ImportPath}} {{.Dir}}' "$@")
pids=() status=0
run() { # import path, package dir, index: runs the binary go test -c wrote for it
	local bin start=$SECONDS rc
	bin=$dir/$(basename "$1").test
	(cd "$2" && "$bin" "${flags[@]}") >"$logs/$3" 2>&1
	rc=$?
	echo "$rc $((SECONDS - start))" >"$logs/$3.result"
	return "$rc"
}
for i in "${!pkgs[@]}"; do
	read -r pkg pkgdir <<<"${pkgs[i]}"
	while (($(jobs -rp | wc -l) >= $(nproc))); do wait -n; done
	run "$pkg" "$pkgdir" "$i" &
	pids+=($!)
done
for i in "${!pkgs[@]}"; do
	wait "${pids[i]}"
	read -r rc took <"$logs/$i.result"
	pkg=${pkgs[i]%% *}
	if ((rc == 0)); then
		printf 'ok  \t%s\t%ds\n' "$pkg" "$took"
	else
		cat "$logs/$i"
		printf 'FAIL\t%s\t%ds (exit %d)\n' "$pkg" "$took" "$rc"
		status=1
	fi
done
exit "$status"
}

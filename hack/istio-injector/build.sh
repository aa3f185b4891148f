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

# Builds Istio's sidecar injection webhook (main.go here: the real
# istio.io/istio/pkg/kube/inject) at the version pinned in this module's
# go.mod into a cache outside the repository, keyed by version and by this
# directory's sources:
#   ${MESHINIT_CACHE:-/var/cache/meshinit}/istio-<version>/istio-injector-<hash>
# Built only when missing (niced); a warm run is instant. Progress goes to
# stderr; stdout has two lines, the binary's path and the directory of the
# istio.io/istio module (its charts: manifests/charts/...):
#   { read -r injector; read -r istio; } < <(hack/istio-injector/build.sh)
set -euo pipefail

GO=${GO:-go}
mod=$(cd "$(dirname "$0")" && pwd)
version=$(awk '{ for (i = 1; i < NF; i++) if ($i == "istio.io/istio") { print $(i + 1); exit } }' "$mod/go.mod")
[[ -n "$version" ]] || { echo "no istio.io/istio version in $mod/go.mod" >&2; exit 1; }
src=$(cd "$mod" && GOWORK=off "$GO" mod download -json istio.io/istio | awk -F'"' '$2 == "Dir" { print $4 }')
[[ -d "$src" ]] || { echo "istio.io/istio@$version: no module directory" >&2; exit 1; }
hash=$(cat "$mod/main.go" "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -c1-12)
dir=${MESHINIT_CACHE:-/var/cache/meshinit}/istio-$version
out=$dir/istio-injector-$hash
if [[ -x "$out" ]]; then
	echo "istio-injector: cached ($version, $hash)" >&2
	printf '%s\n%s\n' "$out" "$src"
	exit 0
fi
mkdir -p "$dir"
tmp=$dir/.istio-injector.tmp.$$ # renamed when complete: an interrupted build leaves no half binary
trap 'rm -f "$tmp"' EXIT
start=$SECONDS
echo "istio-injector: building against istio.io/istio@$version (cold: many minutes)" >&2
(cd "$mod" && GOWORK=off CGO_ENABLED=0 nice -n 19 "$GO" build -trimpath -buildvcs=false \
	-tags=disable_pgv,grpcnotrace,retrynotrace -ldflags "-s -w" -o "$tmp" .)
mv -f "$tmp" "$out"
echo "istio-injector: built in $((SECONDS - start))s" >&2
printf '%s\n%s\n' "$out" "$src"

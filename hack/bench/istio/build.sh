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

# Builds Istio's pilot-agent at the version pinned in hack/bench/istio/go.mod
# into a cache outside the repository, keyed by version:
#   ${MESHINIT_CACHE:-/var/cache/meshinit}/istio-<version>/pilot-agent
# Built only when missing; a warm run is instant. The flags are those of
# Istio's own release build (Makefile.core.mk: AGENT_TAGS, RELEASE_LDFLAGS,
# common/scripts/gobuild.sh), so the binary timed is the one pods run.
# Progress goes to stderr, the binary's path is the only line on stdout:
#   agent=$(hack/bench/istio/build.sh)
set -euo pipefail

GO=${GO:-go}
mod=$(cd "$(dirname "$0")" && pwd)
version=$(awk '{ for (i = 1; i < NF; i++) if ($i == "istio.io/istio") { print $(i + 1); exit } }' "$mod/go.mod")
[[ -n "$version" ]] || { echo "no istio.io/istio version in $mod/go.mod" >&2; exit 1; }
dir=${MESHINIT_CACHE:-/var/cache/meshinit}/istio-$version
out=$dir/pilot-agent
if [[ -x "$out" ]]; then
	echo "pilot-agent: cached ($version)" >&2
	echo "$out"
	exit 0
fi
mkdir -p "$dir"
tmp=$dir/.pilot-agent.tmp.$$ # renamed when complete: an interrupted build leaves no half binary
trap 'rm -f "$tmp"' EXIT

ldflags="-extldflags -static -s -w"
for kv in buildVersion="$version" buildGitRevision="istio.io/istio@$version" buildStatus=Clean \
	buildTag="$version" buildHub=registry.istio.io/release buildOS=linux buildArch="$("$GO" env GOARCH)"; do
	ldflags+=" -X istio.io/istio/pkg/version.$kv"
done
start=$SECONDS
echo "pilot-agent: building istio.io/istio@$version (cold: many minutes)" >&2
(cd "$mod" && GOWORK=off CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false \
	-tags=agent,disable_pgv,grpcnotrace,retrynotrace -ldflags "$ldflags" \
	-o "$tmp" istio.io/istio/pilot/cmd/pilot-agent)
mv -f "$tmp" "$out"
echo "pilot-agent: built in $((SECONDS - start))s" >&2
echo "$out"

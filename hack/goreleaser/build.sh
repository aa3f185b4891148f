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

# Builds GoReleaser (MIT licence) at the version pinned as a tool in this
# directory's go.mod, as a Go module rather than a downloaded binary:
#   ${MESHINIT_CACHE:-/var/cache/meshinit}/goreleaser-<version>/bin/goreleaser
# A warm run finds the binary and only prints its directory; a cold build
# takes minutes (GoReleaser links every publisher's SDK). Progress goes to
# stderr, the binary's path is the only line on stdout:
#   goreleaser=$(hack/goreleaser/build.sh)
set -euo pipefail

GO=${GO:-go}
mod=$(cd "$(dirname "$0")" && pwd)
version=$(awk '$1 == "github.com/goreleaser/goreleaser/v2" { print $2 }' "$mod/go.mod")
[[ -n "$version" ]] || { echo "no github.com/goreleaser/goreleaser/v2 in $mod/go.mod" >&2; exit 1; }
dir=${MESHINIT_CACHE:-/var/cache/meshinit}/goreleaser-$version
mkdir -p "$dir/bin"
exec 9>"$dir/.lock" && flock 9 # a concurrent run waits
if [[ -x "$dir/bin/goreleaser" ]]; then
	echo "$dir/bin/goreleaser"
	exit 0
fi
tmp=$dir/.tmp.$$ # renamed when complete: an interrupted build leaves nothing half done
trap 'rm -f "$tmp"' EXIT
start=$SECONDS
echo "goreleaser: building $version from hack/goreleaser/go.mod (cold: minutes)" >&2
(cd "$mod" && GOWORK=off CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false -o "$tmp" github.com/goreleaser/goreleaser/v2)
mv -f "$tmp" "$dir/bin/goreleaser"
echo "goreleaser: built in $((SECONDS - start))s" >&2
echo "$dir/bin/goreleaser"

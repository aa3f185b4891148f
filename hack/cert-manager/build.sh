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

# Builds the command in this directory (cert-manager's controller and
# cainjector from cert-manager's Go packages, see main.go) at the
# cert-manager version pinned in hack/cert-manager/go.mod, and copies that
# version's Helm chart (its CRDs and RBAC) beside it:
#   ${MESHINIT_CACHE:-/var/cache/meshinit}/cert-manager-<version>/bin/cert-manager
#   ${MESHINIT_CACHE:-/var/cache/meshinit}/cert-manager-<version>/chart/
# It builds only when the binary was built from other sources: a stamp
# beside it holds the hash of this directory's Go files, go.mod, go.sum and
# the Go version, so the binary never lags behind main.go, and make test-e2e
# and TestCertManager (which both run this) do not link it twice (a link of
# a 97 MB binary, seconds of CPU even with a warm build cache). Progress goes
# to stderr, the directory is the only line on stdout:
#   dir=$(hack/cert-manager/build.sh)
{ # read whole before running: a checkout or merge while it runs (builds take minutes) cannot change the script under it
set -euo pipefail

GO=${GO:-go}
mod=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$mod/../.." && pwd)
version=$(awk '$1 == "github.com/cert-manager/cert-manager" { print $2 }' "$mod/go.mod")
[[ -n "$version" ]] || { echo "no github.com/cert-manager/cert-manager in $mod/go.mod" >&2; exit 1; }
# The chart's Certificates and Issuers are checked with the main module's
# cert-manager API types: test the version they come from.
main=$(awk '$1 == "github.com/cert-manager/cert-manager" { print $2 }' "$root/go.mod")
if [[ "$main" != "$version" ]]; then
	echo "hack/cert-manager/go.mod pins cert-manager $version, go.mod $main: make them agree" >&2
	exit 1
fi
dir=${MESHINIT_CACHE:-/var/cache/meshinit}/cert-manager-$version
mkdir -p "$dir/bin"
exec 9>"$dir/.lock" && flock 9 # a concurrent run waits
tmp=$dir/.tmp.$$ # renamed when complete: an interrupted build leaves nothing half done
trap 'rm -rf "$tmp" "$tmp.chart"' EXIT

stamp=$( (cd "$mod" && cat ./*.go go.mod go.sum && "$GO" version) | sha256sum | cut -d' ' -f1)
if [[ -x "$dir/bin/cert-manager" && -d "$dir/chart" && "$(cat "$dir/.stamp" 2>/dev/null)" == "$stamp" ]]; then
	echo "cert-manager: $version cached (built from these sources)" >&2
	echo "$dir"
	exit
fi
start=$SECONDS
echo "cert-manager: building hack/cert-manager at $version (cold: minutes)" >&2
(cd "$mod" && GOWORK=off CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false -o "$tmp" .)
mv -f "$tmp" "$dir/bin/cert-manager"
src=$(cd "$mod" && GOWORK=off "$GO" list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)
cp -r "$src/deploy/charts/cert-manager" "$tmp.chart"
chmod -R u+w "$tmp.chart" # the module cache is read-only
rm -rf "$dir/chart" && mv "$tmp.chart" "$dir/chart"
echo "$stamp" >"$dir/.stamp"
echo "cert-manager: built in $((SECONDS - start))s" >&2
echo "$dir"
exit
}

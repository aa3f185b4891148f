#!/usr/bin/env bash
# Builds the command in this directory (cert-manager's controller and
# cainjector from cert-manager's Go packages, see main.go) at the
# cert-manager version pinned in hack/cert-manager/go.mod, and copies that
# version's Helm chart (its CRDs and RBAC) beside it:
#   ${MESHINIT_CACHE:-/var/cache/meshinit}/cert-manager-<version>/bin/cert-manager
#   ${MESHINIT_CACHE:-/var/cache/meshinit}/cert-manager-<version>/chart/
# It always builds (the Go build cache makes a warm build a link of a few
# seconds), so the binary never lags behind main.go. Progress goes to
# stderr, the directory is the only line on stdout:
#   dir=$(hack/cert-manager/build.sh)
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

start=$SECONDS
echo "cert-manager: building hack/cert-manager at $version (cold: minutes)" >&2
(cd "$mod" && GOWORK=off CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false -o "$tmp" .)
mv -f "$tmp" "$dir/bin/cert-manager"
src=$(cd "$mod" && GOWORK=off "$GO" list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)
cp -r "$src/deploy/charts/cert-manager" "$tmp.chart"
chmod -R u+w "$tmp.chart" # the module cache is read-only
rm -rf "$dir/chart" && mv "$tmp.chart" "$dir/chart"
echo "cert-manager: built in $((SECONDS - start))s" >&2
echo "$dir"

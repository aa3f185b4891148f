#!/usr/bin/env bash
# Generates api/'s deepcopy code and the RedirectPolicy CRD with the
# controller-gen pinned in this directory's go.mod.
#   generate.sh        writes them in place: api/v1alpha1/zz_generated.deepcopy.go
#                      and charts/meshinit/crds/ (the chart's CRD, its only copy)
#   generate.sh DIR    writes them to DIR/object and DIR/crd instead, so a test
#                      can check that the committed files are current
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
GO=${GO:-go}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

(cd "$here" && GOWORK=off "$GO" build -o "$bin/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen)

if [[ $# -gt 0 ]]; then
	out=("output:object:dir=$1/object" "output:crd:dir=$1/crd")
else
	out=("output:crd:dir=charts/meshinit/crds")
fi
cd "$root"
"$bin/controller-gen" object crd:crdVersions=v1 paths=./api/... "${out[@]}"

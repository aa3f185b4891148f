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

# controller-gen is built once into the cache, like the other upstream
# binaries (hack/upstream-binaries.sh), and again only when this module's
# go.mod, go.sum or the Go version change (a stamp beside it holds their
# hash): api/v1alpha1's TestGeneratedFilesAreCurrent runs this on every
# make test, and linked it afresh each time.
version=$(awk '$1 == "sigs.k8s.io/controller-tools" { print $2 } $2 == "sigs.k8s.io/controller-tools" { print $3 }' "$here/go.mod")
bin=${MESHINIT_CACHE:-/var/cache/meshinit}/controller-gen-${version:?no sigs.k8s.io/controller-tools in $here/go.mod}
mkdir -p "$bin"
trap 'rm -f "$bin/.controller-gen.$$"' EXIT # an interrupted build leaves no half binary
stamp=$( (cd "$here" && cat go.mod go.sum && "$GO" version) | sha256sum | cut -d' ' -f1)
if [[ ! -x "$bin/controller-gen" || "$(cat "$bin/.stamp" 2>/dev/null)" != "$stamp" ]]; then
	exec 9>"$bin/.lock" && flock 9 # a concurrent run waits, then finds it built
	if [[ ! -x "$bin/controller-gen" || "$(cat "$bin/.stamp" 2>/dev/null)" != "$stamp" ]]; then
		(cd "$here" && GOWORK=off "$GO" build -o "$bin/.controller-gen.$$" sigs.k8s.io/controller-tools/cmd/controller-gen)
		mv -f "$bin/.controller-gen.$$" "$bin/controller-gen"
		echo "$stamp" >"$bin/.stamp"
	fi
	exec 9>&-
fi

if [[ $# -gt 0 ]]; then
	out=("output:object:dir=$1/object" "output:crd:dir=$1/crd")
else
	out=("output:crd:dir=charts/meshinit/crds")
fi
cd "$root"
"$bin/controller-gen" object:headerFile=hack/boilerplate/boilerplate.go.txt crd:crdVersions=v1 paths=./api/... "${out[@]}"

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

# controller-gen is built once into the cache (build.sh): api/v1alpha1's
# TestGeneratedFilesAreCurrent runs this on every make test.
controllergen=$(GO=$GO "$here/build.sh")

if [[ $# -gt 0 ]]; then
	out=("output:object:dir=$1/object" "output:crd:dir=$1/crd")
else
	out=("output:crd:dir=charts/meshinit/crds")
fi
cd "$root"
"$controllergen" object:headerFile=hack/boilerplate/boilerplate.go.txt crd:crdVersions=v1 paths=./api/... "${out[@]}"

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

# Builds the controller-gen pinned in this directory's go.mod once into the
# cache, like the other upstream binaries (hack/upstream-binaries.sh), and
# again only when this module's go.mod, go.sum or the Go version change (a
# stamp beside it holds their hash), and prints its path:
#   ${MESHINIT_CACHE:-/var/cache/meshinit}/controller-gen-<version>/controller-gen
# generate.sh (api/'s code and CRD) and hack/prometheus/build.sh (the
# Prometheus Operator's CRDs) run it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
GO=${GO:-go}
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
echo "$bin/controller-gen"

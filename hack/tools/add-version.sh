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

# Writes the module hack/tools/<version>/ that hack/upstream-binaries.sh
# builds that Kubernetes version's kube-apiserver from for the version matrix
# (its kubectl and etcd are the pinned version's, see there): it requires
# k8s.io/kubernetes <version> and replaces each staging module of its replace
# block with its published version. Then go mod tidy.
#   hack/tools/add-version.sh v1.33.13
set -euo pipefail

version=${1:?usage: $0 v1.MINOR.PATCH}
[[ "$version" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || { echo "$version: want v1.MINOR.PATCH" >&2; exit 2; }
staging=v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
GO=${GO:-go}
dir=$(cd "$(dirname "$0")" && pwd)/$version
upstream=$(mktemp)
trap 'rm -f "$upstream"' EXIT
curl -fsS "$("$GO" env GOPROXY | cut -d, -f1)/k8s.io/kubernetes/@v/$version.mod" >"$upstream"

mkdir -p "$dir"
{
	echo "// Module $version builds kube-apiserver of Kubernetes $version for the"
	echo "// version matrix of make test (written by hack/tools/add-version.sh;"
	echo "// hack/tools/go.mod pins the version the rest of the tooling uses, and"
	echo "// its kubectl and etcd serve the matrix too)."
	echo "module github.com/meshinit/meshinit/hack/tools/$version"
	echo
	echo "go $(awk '$1 == "go" { print $2 }' "$upstream")"
	echo
	echo "require k8s.io/kubernetes $version"
	echo
	echo "// k8s.io/kubernetes replaces its staging modules with local paths; point each"
	echo "// at its published version instead (the replace block of its go.mod)."
	echo "replace ("
	sed -n '/^replace (/,/^)/p' "$upstream" | awk -v v="$staging" '$2 == "=>" { print "\t" $1 " => " $1 " " v }'
	echo ")"
} >"$dir/go.mod"
cat >"$dir/tools.go" <<'GO'
//go:build tools

// Package tools records the upstream commands this module builds, so that
// go mod tidy keeps their dependencies.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
GO
(cd "$dir" && GOWORK=off "$GO" mod tidy)
echo "$dir" >&2

#!/usr/bin/env bash
# Writes the module hack/tools/<version>/ that hack/upstream-binaries.sh
# builds that Kubernetes version's envtest binaries (kube-apiserver,
# kubectl, etcd) from: it requires k8s.io/kubernetes <version> and the etcd
# server that version's go.mod requires, and replaces each staging module of
# its replace block with its published version. Then go mod tidy.
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
etcd=$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2 }' "$upstream")
[[ -n "$etcd" ]] || { echo "k8s.io/kubernetes $version's go.mod requires no go.etcd.io/etcd/server/v3" >&2; exit 1; }

mkdir -p "$dir"
{
	echo "// Module $version builds kube-apiserver, kubectl and etcd of Kubernetes"
	echo "// $version for the version matrix of make test (written by"
	echo "// hack/tools/add-version.sh; hack/tools/go.mod pins the version the rest"
	echo "// of the tooling uses)."
	echo "module github.com/meshinit/meshinit/hack/tools/$version"
	echo
	echo "go $(awk '$1 == "go" { print $2 }' "$upstream")"
	echo
	echo "require ("
	echo "	go.etcd.io/etcd/server/v3 $etcd"
	echo "	k8s.io/kubernetes $version"
	echo ")"
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

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
(cd "$dir" && GOWORK=off "$GO" mod tidy)
echo "$dir" >&2

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

# Builds pinned upstream binaries (Kubernetes, etcd) from the tools module
# hack/tools/go.mod into a cache outside the repository, keyed by version:
#   ${MESHINIT_CACHE:-/var/cache/meshinit}/kubernetes-<version>/bin
# With a version (v1.30.14), the envtest set of that version instead, for the
# version matrix of make test: its kube-apiserver is built from its own module
# hack/tools/<version>/go.mod; its kubectl and etcd are links to the pinned
# version's. The matrix tests that version's API server (admission); etcd is
# only its storage, whose v3 API does not change between releases, and the
# tests use kubectl only for apply --dry-run=server, create and get of core
# objects, which the pinned kubectl does against each of these servers
# (beyond kubectl's supported skew, but proven by make test-matrix): building
# them per version tested nothing more and cost a cold build half a minute
# a version (most of their packages are kube-apiserver's). The version hack/tools/go.mod pins may be named too.
# Only missing binaries are built, all of a version in one go build so that
# compiling and linking overlap on every core; a warm run is instant.
# Progress goes to stderr, the bin dir is the last line of output (on
# stdout), so:
#   KUBEBUILDER_ASSETS=$(hack/upstream-binaries.sh envtest | tail -1)
{ # read whole before running: a checkout or merge while it runs (builds take minutes) cannot change the script under it
set -euo pipefail

case "${1:-}" in
envtest) bins=(kube-apiserver kubectl etcd kube-controller-manager) ;;
cluster) bins=(kube-apiserver kubectl etcd kubelet kube-controller-manager kube-scheduler kube-proxy) ;;
*) echo "usage: $0 envtest|cluster [version]" >&2; exit 2 ;;
esac

GO=${GO:-go}
cache=${MESHINIT_CACHE:-/var/cache/meshinit}
tools=$(cd "$(dirname "$0")/tools" && pwd)
# A go.mod requiring one module only has it on the require line.
module_version() { awk '{ sub(/^require[ \t]+/, "") } $1 == "k8s.io/kubernetes" { print $2 }' "$1/go.mod"; }
# The version is pinned in hack/tools/go.mod; the Makefile's KUBERNETES_VERSION must agree.
pinned=$(module_version "$tools")
if [[ -n "${KUBERNETES_VERSION:-}" && "$KUBERNETES_VERSION" != "$pinned" ]]; then
	echo "KUBERNETES_VERSION=$KUBERNETES_VERSION, but hack/tools/go.mod pins k8s.io/kubernetes $pinned" >&2
	exit 1
fi

tmps=() # removed on exit: an interrupted build leaves no half binary
trap 'rm -rf "${tmps[@]}"' EXIT

ldflags() { # module dir, version: what Kubernetes' own build stamps, so --version reports it
	local version=$2 v=${2#v} date
	# The module proxy does not record the release commit: gitCommit says where the source came from.
	date=$(cd "$1" && GOWORK=off "$GO" list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
	local out="-s -w"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		out+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=${v%%.*} -X $pkg.gitMinor=$(cut -d. -f2 <<<"$v")"
		out+=" -X $pkg.gitCommit=k8s.io/kubernetes@$version -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
	done
	echo "$out"
}

# build MODULE_DIR NAME...: builds the named binaries of that module's
# Kubernetes version that its bin dir lacks, in one go build, and sets bin
# to that dir (not echoed: a subshell would not run the EXIT trap).
build() {
	local mod=$1 version name pkg lock missing=() pkgs=()
	shift
	version=$(module_version "$mod")
	bin=$cache/kubernetes-$version/bin
	mkdir -p "$bin"
	for name; do [[ -x "$bin/$name" ]] || missing+=("$name"); done
	if ((${#missing[@]})); then # a concurrent run waits, then finds them built
		exec {lock}>"$bin/.lock" && flock "$lock"
		missing=()
		for name; do [[ -x "$bin/$name" ]] || missing+=("$name"); done
	fi
	for name; do [[ " ${missing[*]} " == *" $name "* ]] || echo "$version $name: cached" >&2; done
	if ((${#missing[@]})); then
		for name in "${missing[@]}"; do
			case "$name" in
			etcd) pkgs+=(go.etcd.io/etcd/server/v3) ;; # version pinned in the tools module (the one that Kubernetes uses)
			*) pkgs+=("k8s.io/kubernetes/cmd/$name") ;;
			esac
		done
		echo "$version ${missing[*]}: building (not cached yet: minutes, once per version)..." >&2
		local start=$SECONDS tmp=$bin/.tmp.$$ flags
		flags=$(ldflags "$mod" "$version")
		tmps+=("$tmp")
		mkdir -p "$tmp"
		(cd "$mod" && GOWORK=off CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false -ldflags "$flags" -o "$tmp/" "${pkgs[@]}")
		for name in "${missing[@]}"; do
			local out=$name
			# go build names etcd's binary after its package path without the major version suffix
			[[ "$name" != etcd ]] || out=server
			mv -f "$tmp/$out" "$bin/$name"
		done
		echo "$version ${missing[*]}: built in $((SECONDS - start))s" >&2
	fi
	# Released, so that a matrix version's build does not hold the pinned version's lock.
	[[ -z "${lock:-}" ]] || exec {lock}>&-
}

if [[ -z "${2:-}" || "$2" == "$pinned" ]]; then
	build "$tools" "${bins[@]}"
	echo "$bin"
	exit
fi

# A matrix version.
if [[ ! -f "$tools/$2/go.mod" ]]; then
	echo "no module hack/tools/$2/go.mod pins Kubernetes $2" >&2
	exit 1
fi
if [[ "$1" != envtest ]]; then # its tools.go names only kube-apiserver
	echo "Kubernetes $2 is built for envtest only (hack/tools/$2/tools.go)" >&2
	exit 1
fi
if [[ "$(module_version "$tools/$2")" != "$2" ]]; then
	echo "hack/tools/$2/go.mod pins k8s.io/kubernetes $(module_version "$tools/$2"), not $2" >&2
	exit 1
fi
build "$tools" kubectl etcd kube-controller-manager
build "$tools/$2" kube-apiserver
for name in kubectl etcd kube-controller-manager; do
	# Relative, so the cache may move; a binary built here before is replaced, so
	# that every machine tests the same layout.
	target=../../kubernetes-$pinned/bin/$name
	if [[ "$(readlink "$bin/$name" || true)" != "$target" ]]; then
		tmps+=("$bin/.$name.tmp.$$")
		ln -sfn "$target" "$bin/.$name.tmp.$$"
		mv -fT "$bin/.$name.tmp.$$" "$bin/$name"
		echo "$2 $name: linked to $pinned's" >&2
	fi
done
echo "$bin"
exit
}

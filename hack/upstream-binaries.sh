#!/usr/bin/env bash
# Builds pinned upstream binaries (Kubernetes, etcd) from the tools module
# hack/tools/go.mod into a cache outside the repository, keyed by version:
#   ${MESHINIT_CACHE:-/var/cache/meshinit}/kubernetes-<version>/bin
# With a version (v1.30.14), the envtest set of that version instead, from its
# own module hack/tools/<version>/go.mod (the version matrix of make test);
# the version hack/tools/go.mod pins may be named too.
# Only missing binaries are built; a warm run is instant. Progress goes to
# stderr, the bin dir is the last line of output (on stdout), so:
#   KUBEBUILDER_ASSETS=$(hack/upstream-binaries.sh envtest | tail -1)
set -euo pipefail

case "${1:-}" in
envtest) bins=(kube-apiserver kubectl etcd) ;;
cluster) bins=(kube-apiserver kubectl etcd kubelet kube-controller-manager kube-scheduler kube-proxy) ;;
*) echo "usage: $0 envtest|cluster [version]" >&2; exit 2 ;;
esac

GO=${GO:-go}
tools=$(cd "$(dirname "$0")/tools" && pwd)
# The version is pinned in hack/tools/go.mod; the Makefile's KUBERNETES_VERSION must agree.
version=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' "$tools/go.mod")
if [[ -n "${KUBERNETES_VERSION:-}" && "$KUBERNETES_VERSION" != "$version" ]]; then
	echo "KUBERNETES_VERSION=$KUBERNETES_VERSION, but hack/tools/go.mod pins k8s.io/kubernetes $version" >&2
	exit 1
fi
if [[ -n "${2:-}" && "$2" != "$version" ]]; then
	if [[ ! -f "$tools/$2/go.mod" ]]; then
		echo "no module hack/tools/$2/go.mod pins Kubernetes $2" >&2
		exit 1
	fi
	if [[ "$1" != envtest ]]; then # its tools.go names only these three
		echo "Kubernetes $2 is built for envtest only (hack/tools/$2/tools.go)" >&2
		exit 1
	fi
	tools=$tools/$2
	version=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' "$tools/go.mod")
	if [[ "$version" != "$2" ]]; then
		echo "hack/tools/$2/go.mod pins k8s.io/kubernetes $version, not $2" >&2
		exit 1
	fi
fi
bin=${MESHINIT_CACHE:-/var/cache/meshinit}/kubernetes-$version/bin
mkdir -p "$bin"
trap 'rm -f "$bin"/.*.tmp.$$' EXIT

ldflags() { # what Kubernetes' own build stamps, so --version reports $version
	local v=${version#v} date
	# The module proxy does not record the release commit: gitCommit says where the source came from.
	date=$(cd "$tools" && GOWORK=off "$GO" list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)
	local out="-s -w"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		out+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=${v%%.*} -X $pkg.gitMinor=$(cut -d. -f2 <<<"$v")"
		out+=" -X $pkg.gitCommit=k8s.io/kubernetes@$version -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
	done
	echo "$out"
}

for name in "${bins[@]}"; do
	if [[ ! -x "$bin/$name" && -z "${locked:-}" ]]; then # a concurrent run waits, then finds it built
		exec 9>"$bin/.lock" && flock 9 && locked=1
	fi
	if [[ -x "$bin/$name" ]]; then
		echo "$name: cached" >&2
		continue
	fi
	case "$name" in
	etcd) pkg=go.etcd.io/etcd/server/v3 ;; # version pinned in the tools module (the one that Kubernetes uses)
	*) pkg=k8s.io/kubernetes/cmd/$name ;;
	esac
	[[ -n "${ldflags:-}" ]] || ldflags=$(ldflags)
	echo "$name: building $pkg (not cached yet: minutes, once per version)..." >&2
	start=$SECONDS
	tmp=$bin/.$name.tmp.$$ # renamed when complete: an interrupted build leaves no half binary
	(cd "$tools" && GOWORK=off CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$tmp" "$pkg")
	mv -f "$tmp" "$bin/$name"
	echo "$name: built in $((SECONDS - start))s" >&2
done
echo "$bin"

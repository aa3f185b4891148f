#!/usr/bin/env bash
# Installs the Debian packages meshinit's tests run for real, only when missing.
# --cluster adds the node pieces of e2e's local cluster (e2e/cluster).
set -euo pipefail
packages=(iptables iproute2 ca-certificates)
if [[ "${1:-}" == --cluster ]]; then
  packages+=(containerd runc containernetworking-plugins)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

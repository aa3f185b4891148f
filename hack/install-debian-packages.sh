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

# Installs the Debian packages meshinit's tests run for real, only when missing.
# By default what make test needs: iptables and iproute2 for the network
# namespaces, runc to run the redirector's image as a container
# (internal/images' TestRedirectorImage). --cluster adds the node pieces of
# e2e's local cluster (e2e/cluster).
set -euo pipefail
packages=(iptables iproute2 ca-certificates runc)
if [[ "${1:-}" == --cluster ]]; then
  packages+=(containerd containernetworking-plugins)
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

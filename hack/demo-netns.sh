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

# A first look at meshinit's redirector, with no cluster: a "pod" network
# namespace joined to a "client" namespace by a veth pair, an app on :8080, a
# stand-in proxy on :15006/:15001, and the real redirector in between.
# Needs root. Leaves nothing behind.
set -euo pipefail
cd "$(dirname "$0")/.."
out=_output/demo
pod=meshinit-demo-pod client=meshinit-demo-client
step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

cleanup() {
  kill $(jobs -p) 2>/dev/null || true
  ip netns del "$pod" 2>/dev/null || true
  ip netns del "$client" 2>/dev/null || true
}
trap cleanup EXIT
cleanup

step "building the redirector and a test server"
mkdir -p "$out"
CGO_ENABLED=0 go build -o "$out/redirector" ./initimage/cmd/redirector
go build -o "$out/testserver" ./internal/testproxy/cmd/testserver

step "creating a pod-like network namespace ($pod, 10.239.0.2) and a client ($client, 10.239.0.1)"
ip netns add "$pod"
ip netns add "$client"
ip link add mdemo0 netns "$pod" type veth peer name mdemo1 netns "$client"
ip -n "$pod" addr add 10.239.0.2/24 dev mdemo0
ip -n "$client" addr add 10.239.0.1/24 dev mdemo1
for ns in "$pod" "$client"; do ip -n "$ns" link set lo up; done
ip -n "$pod" link set mdemo0 up
ip -n "$client" link set mdemo1 up

step "starting the app (:8080, :8081) and the stand-in proxy (:15006 inbound, :15001 outbound) in the pod"
ip netns exec "$pod" "$out/testserver" -name app -listen 0.0.0.0:8080,0.0.0.0:8081 2>/dev/null &
ip netns exec "$pod" "$out/testserver" -name proxy-inbound -listen 0.0.0.0:15006 2>/dev/null &
ip netns exec "$pod" "$out/testserver" -name proxy-outbound -listen 0.0.0.0:15001 2>/dev/null &
ip netns exec "$client" "$out/testserver" -name client-service -listen 0.0.0.0:9090 2>/dev/null &
sleep 0.5
ask() { # ask <netns> <uid> <host> <port>
  ip netns exec "$1" setpriv --reuid "$2" --regid "$2" --clear-groups \
    bash -c "exec 3<>/dev/tcp/$3/$4 && head -1 <&3"
}
echo "before: client -> pod:8080 answers: $(ask "$client" 0 10.239.0.2 8080)"

args=(--exclude-inbound-ports=8081 --ipv6=off)
step "what the webhook would write into the init container: redirector apply ${args[*]}"
"$out/redirector" print "${args[@]}"

step "running it inside the pod's network namespace"
ip netns exec "$pod" "$out/redirector" apply "${args[@]}"

step "the pod's nat table now"
ip netns exec "$pod" iptables-nft-save -t nat | grep -v '^#'

step "traffic"
echo "client -> pod:8080 (captured):      $(ask "$client" 0 10.239.0.2 8080)"
echo "client -> pod:8081 (excluded):      $(ask "$client" 0 10.239.0.2 8081)"
echo "app (uid 1000) -> client:9090:      $(ask "$pod" 1000 10.239.0.1 9090)"
echo "proxy (uid 1337) -> client:9090:    $(ask "$pod" 1337 10.239.0.1 9090)"

step "running apply again (an init container restarted after container GC) is a no-op"
ip netns exec "$pod" "$out/redirector" apply "${args[@]}" 2>&1 | tail -1

step "cleanup removes meshinit's rules and nothing else"
ip netns exec "$pod" "$out/redirector" cleanup
ip netns exec "$pod" iptables-nft-save -t nat | grep -v '^#'
echo "client -> pod:8080 after cleanup:   $(ask "$client" 0 10.239.0.2 8080)"

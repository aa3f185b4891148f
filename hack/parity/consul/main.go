/*
Copyright The meshinit Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Command consul-redirect programs Consul's transparent-proxy redirect
// into the current network namespace, as consul-cni does: its one argument
// is the JSON of an iptables.Config, the form consul-k8s's injector writes
// into the pod annotation consul.hashicorp.com/redirect-traffic-config and
// consul-cni reads, and it calls iptables.Setup with it (IPv4 only). The
// iptables binary is whichever "iptables" is first in PATH.
//
//	consul-redirect '{"ProxyUserID":"5995","ProxyInboundPort":20000,"ProxyOutboundPort":15001,"ExcludeUIDs":["5996"]}'
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/hashicorp/consul/sdk/iptables"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: consul-redirect <iptables.Config as JSON>")
		os.Exit(2)
	}
	var cfg iptables.Config
	if err := json.Unmarshal([]byte(os.Args[1]), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "reading the configuration:", err)
		os.Exit(2)
	}
	if err := iptables.Setup(cfg, false); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

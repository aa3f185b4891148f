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

// Command istio-iptables is Istio's `pilot-agent istio-iptables` alone: the
// same cobra command (istio.io/istio/tools/istio-iptables/pkg/cmd.GetCommand,
// which pilot-agent's root command adds), at the version pinned in
// ../go.mod, without the rest of pilot-agent (a third of its dependencies,
// so the parity tables of package redirect build it in minutes, not many).
// Its flags and behaviour are pilot-agent istio-iptables':
//
//	istio-iptables -p 15001 -z 15006 -u 1337 -g 1337 -m REDIRECT -i '*' -b '*' -d 15090,15021,15020
package main

import (
	"os"

	"istio.io/istio/pkg/log"
	iptables "istio.io/istio/tools/istio-iptables/pkg/cmd"
)

func main() {
	cmd := iptables.GetCommand(log.DefaultOptions())
	cmd.SetArgs(os.Args[1:])
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}

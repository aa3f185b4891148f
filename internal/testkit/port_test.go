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

package testkit

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortBelowEphemeral: FreePort's ports lie below the kernel's
// ephemeral range, are never handed out twice in a process, and can be
// listened on.
func TestFreePortBelowEphemeral(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 200 {
		port := FreePort(t)
		if port < listenerLow || port >= low {
			t.Fatalf("port %d outside %d-%d", port, listenerLow, low-1)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("port %d: %v", port, err)
		}
		l.Close()
	}
}

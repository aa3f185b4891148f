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
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// FreePort is a TCP port that was free on every address a moment ago, for
// a server a test starts to listen on. It is taken from below the kernel's
// ephemeral range (ip_local_port_range, 32768-60999 by default), never from
// it: a port there, free when checked, can be given to an outgoing
// connection (to an API server, to etcd) before the server binds it, and
// the server then fails with "address already in use". Ports are chosen at
// random and never twice in one process, so that packages run side by side
// seldom meet.
func FreePort(t testing.TB) int {
	t.Helper()
	low := ephemeralLow()
	for range 1000 {
		port := low - 1 - rand.IntN(low-listenerLow)
		if !handedOut.claim(port) {
			continue
		}
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	t.Fatalf("no free TCP port found in %d-%d", listenerLow, low-1)
	return 0
}

// listenerLow is the lowest port FreePort hands out.
const listenerLow = 20000

// handedOut are the ports FreePort has returned in this process.
var handedOut = &portSet{ports: map[int]bool{}}

type portSet struct {
	sync.Mutex
	ports map[int]bool
}

// claim records port and reports whether it was not recorded before.
func (s *portSet) claim(port int) bool {
	s.Lock()
	defer s.Unlock()
	if s.ports[port] {
		return false
	}
	s.ports[port] = true
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range, or
// Linux's default where it cannot be read or leaves no room below it.
func ephemeralLow() int {
	const linuxDefault = 32768
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return linuxDefault
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= listenerLow+1000 {
		return linuxDefault
	}
	return low
}

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

package testdns

import (
	"net"
	"testing"
)

// TestRoundTrip: Ask gets the server's name back over UDP and over TCP.
func TestRoundTrip(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go ServeUDP(pc, "udp-server")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go ServeTCP(l, "tcp-server")
	for _, tc := range []struct{ network, addr, want string }{
		{"udp", pc.LocalAddr().String(), "udp-server"},
		{"tcp", l.Addr().String(), "tcp-server"},
	} {
		c, err := net.Dial(tc.network, tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Ask(c, "app.team.svc.cluster.local")
		c.Close()
		if err != nil || got != tc.want {
			t.Errorf("%s: Ask = %q, %v; want %q", tc.network, got, err, tc.want)
		}
	}
}

// TestAnswerRefusesGarbage: no answer to what is not a query.
func TestAnswerRefusesGarbage(t *testing.T) {
	for _, msg := range [][]byte{nil, make([]byte, 11), append(Query(1, "a.b")[:13], 5)} {
		if _, err := Answer(msg, "x"); err == nil {
			t.Errorf("Answer(%x) answered", msg)
		}
	}
	if _, err := parseAnswer(Query(1, "a.b"), 1, "a.b"); err == nil {
		t.Error("a query parsed as an answer")
	}
}

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

// Command testserver answers every TCP connection with one line: its name
// and, when the connection was redirected, the original destination. The
// demo and the end-to-end tests run it as the app and as the proxy.
//
// With -dial it is a client instead: it connects to that address (retrying
// for up to -timeout), prints the answer on standard output and exits 0
// only if the answer starts with -expect (the Helm chart's test pod uses
// this to see its traffic reach the proxy; the end-to-end tests and the
// demo run it in pods with kubectl exec).
//
// With -dns it also answers DNS, over UDP and TCP, on those addresses (a TXT
// record naming it, as internal/testdns does); with -dial and -dns-over
// udp or tcp the client sends a DNS query instead and prints the answer's
// text. The end-to-end test of DNS capture runs it as the nameserver, the
// DNS proxy and the app's resolver.
//
// Called with pilot-agent's command lines, it stands in for Istio's proxy
// (istio.go).
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/meshinit/meshinit/internal/testdns"
	"github.com/meshinit/meshinit/internal/testproxy"
)

func main() {
	if istioStandIn(os.Args[1:]) {
		return
	}
	listen := flag.String("listen", ":15006", "comma-separated addresses to listen on")
	name := flag.String("name", "proxy", "name to answer with")
	dial := flag.String("dial", "", "connect to this address, print the answer and exit instead of serving")
	expect := flag.String("expect", "", "with -dial: exit 1 unless the answer starts with this")
	timeout := flag.Duration("timeout", 5*time.Second, "with -dial: keep trying to connect and read an answer for this long")
	connect := flag.Bool("connect", false, "with -dial: only connect, read no answer (a server that speaks first, e.g. TLS, is not one)")
	dns := flag.String("dns", "", "comma-separated addresses to answer DNS on, over UDP and TCP")
	dnsOver := flag.String("dns-over", "", `with -dial: send a DNS query over "udp" or "tcp" and print the answer's text`)
	flag.Parse()
	if *dial != "" {
		var line string
		var err error
		if *dnsOver != "" {
			line, err = askDNS(*dnsOver, *dial, *timeout)
		} else {
			line, err = ask(*dial, *timeout, *connect)
		}
		if err != nil {
			log.Fatalf("dial %s: %v", *dial, err)
		}
		fmt.Println(line)
		if !strings.HasPrefix(line, *expect) {
			log.Fatalf("dial %s: answer %q does not start with %q", *dial, line, *expect)
		}
		return
	}
	for addr := range strings.SplitSeq(*listen, ",") {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			log.Fatalf("listen %s: %v", addr, err)
		}
		log.Printf("%s listening on %s", *name, l.Addr())
		go testproxy.Serve(l, *name)
	}
	for addr := range strings.SplitSeq(*dns, ",") {
		if addr == "" {
			continue
		}
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			log.Fatalf("listen udp %s: %v", addr, err)
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			log.Fatalf("listen tcp %s: %v", addr, err)
		}
		log.Printf("%s answering DNS on %s (UDP and TCP)", *name, addr)
		go testdns.ServeUDP(pc, *name)
		go testdns.ServeTCP(l, *name)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
}

// askDNS sends a DNS query to addr over network (udp or tcp), retrying
// failed attempts until timeout, and returns the answer's text.
func askDNS(network, addr string, timeout time.Duration) (string, error) {
	if network != "udp" && network != "tcp" {
		return "", fmt.Errorf("-dns-over=%q: want udp or tcp", network)
	}
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout(network, addr, max(time.Until(deadline), time.Second))
		var text string
		if err == nil {
			text, err = testdns.Ask(c, "e2e.meshinit.test")
			c.Close()
		}
		if err == nil || time.Now().After(deadline) {
			return text, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ask asks addr for its line ("connected" with connectOnly), retrying
// failed attempts until timeout.
func ask(addr string, timeout time.Duration, connectOnly bool) (string, error) {
	deadline := time.Now().Add(timeout)
	// Each attempt is short and a new connection: a SYN sent before
	// kube-proxy wrote a Service's rules leaves a conntrack entry without
	// the DNAT, and the kernel's retransmissions of that SYN keep matching
	// it, so one long attempt never reaches the Service.
	const attempt = 3 * time.Second
	for {
		dial := func() (net.Conn, error) {
			return net.DialTimeout("tcp", addr, min(max(time.Until(deadline), time.Second), attempt))
		}
		var line string
		var err error
		if connectOnly {
			var c net.Conn
			if c, err = dial(); err == nil {
				line = "connected"
				c.Close()
			}
		} else {
			line, err = testproxy.Ask(dial)
		}
		if err == nil || time.Now().After(deadline) {
			return line, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

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

package main

// Istio's proxy image (docker.io/istio/proxyv2, Envoy and pilot-agent)
// cannot run on the test machine, so in the end-to-end test of composing
// with Istio's real injector (e2e/istio_test.go) the test proxy's image
// stands in for it: Istio's injection template runs that image with
// pilot-agent's command lines, and testserver, called so, does what the
// proxy does that the test can observe.

import (
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/meshinit/meshinit/internal/testproxy"
)

// istioStandIn runs the stand-in when args (the command line after the
// program's name) is one of pilot-agent's that Istio's injection template
// writes, and reports whether it was.
func istioStandIn(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0] {
	case "proxy": // istio-proxy: pilot-agent proxy sidecar ...
		istioProxy()
	case "istio-iptables": // istio-validation: pilot-agent istio-iptables ... --run-validation
		istioValidation(args[1:])
	default:
		return false
	}
	return true
}

// istioProxy stands in for istio-proxy: Envoy's outbound (15001) and inbound
// (15006) listeners answer as the test proxy does, with the original
// destination; the status port 15021 serves /healthz/ready as pilot-agent
// does (the template's readiness probe); 15020 (pilot-agent's merged
// metrics) and 15090 (Envoy's) answer with their names, not redirected.
func istioProxy() {
	serve := func(addr, name string) {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			log.Fatalf("listen %s: %v", addr, err)
		}
		log.Printf("%s listening on %s", name, l.Addr())
		go testproxy.Serve(l, name)
	}
	serve(":15001", "istio-proxy/outbound")
	serve(":15006", "istio-proxy/inbound")
	serve(":15020", "istio-proxy/15020")
	serve(":15090", "istio-proxy/15090")
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz/ready", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ready") })
	l, err := net.Listen("tcp", ":15021")
	if err != nil {
		log.Fatalf("listen :15021: %v", err)
	}
	log.Printf("istio-proxy status on %s", l.Addr())
	go func() {
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		log.Fatal(srv.Serve(l))
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
}

// istioValidation does what Istio's istio-validation init container does
// with --run-validation (istio.io/istio tools/istio-iptables/pkg/validation,
// validator.go): listen on 127.0.0.1 at the outbound (-p) and inbound (-z)
// proxy ports, connect from 127.0.0.1 to 127.0.0.6:15002 (the probe port)
// as the proxy's UID, and pass once a listener receives a connection whose
// original destination port is 15002: the redirect is in place. It fails
// after 5 s (Istio's default probe timeout) otherwise, and the pod does not
// start, as with Istio's.
func istioValidation(args []string) {
	outbound, inbound := "15001", "15006"
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "-p", "--proxy-port":
			outbound = args[i+1]
		case "-z", "--inbound-capture-port":
			inbound = args[i+1]
		}
	}
	const probePort = 15002
	done := make(chan netip.AddrPort, 1)
	for _, port := range []string{outbound, inbound} {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			log.Fatalf("istio-validation: listen 127.0.0.1:%s: %v", port, err)
		}
		go testproxy.Each(l, func(c net.Conn) {
			tc, ok := c.(*net.TCPConn)
			if !ok {
				return
			}
			dst, err := testproxy.OriginalDst(tc)
			if err != nil {
				return
			}
			fmt.Fprint(c, strconv.Itoa(int(dst.Port())))
			if dst.Port() == probePort {
				select {
				case done <- netip.MustParseAddrPort(c.LocalAddr().String()):
				default:
				}
			}
		})
	}
	go func() {
		local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}
		remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 6), Port: probePort}
		for {
			if c, err := net.DialTCP("tcp", local, remote); err == nil {
				c.Close()
			}
			time.Sleep(time.Second)
		}
	}()
	select {
	case at := <-done:
		log.Printf("istio-validation: passed, 127.0.0.6:%d arrived at %s: the redirect is in place", probePort, at)
	case <-time.After(5 * time.Second):
		log.Fatalf("istio-validation: failed: no connection to 127.0.0.6:%d was redirected to 127.0.0.1:%s or :%s within 5s", probePort, outbound, inbound)
	}
}

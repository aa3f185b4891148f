// Command testserver answers every TCP connection with one line: its name
// and, when the connection was redirected, the original destination. The
// demo and the end-to-end tests run it as the app and as the proxy.
package main

import (
	"flag"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/meshinit/meshinit/internal/testproxy"
)

func main() {
	listen := flag.String("listen", ":15006", "comma-separated addresses to listen on")
	name := flag.String("name", "proxy", "name to answer with")
	flag.Parse()
	for addr := range strings.SplitSeq(*listen, ",") {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			log.Fatalf("listen %s: %v", addr, err)
		}
		log.Printf("%s listening on %s", *name, l.Addr())
		go testproxy.Serve(l, *name)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
}

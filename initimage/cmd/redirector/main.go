// Command redirector programs a pod's iptables so its TCP traffic flows
// through the proxy. It runs as meshinit's init container.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/meshinit/meshinit/initimage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(initimage.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

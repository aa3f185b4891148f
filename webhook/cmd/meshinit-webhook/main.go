// Command meshinit-webhook is meshinit's mutating admission webhook server:
// it injects the redirect init container into the pods that opt in.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/meshinit/meshinit/webhook"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(webhook.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Command kubectl-meshinit is `kubectl meshinit`: put it on PATH and kubectl
// runs it as a plugin.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/meshinit/meshinit/kubectlplugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(kubectlplugin.Main(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

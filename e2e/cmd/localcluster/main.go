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

// Command localcluster starts and stops meshinit's local single-node
// Kubernetes cluster (see package e2e/cluster), as root:
//
//	localcluster up     # progress on stderr; the kubeconfig path, last, on stdout
//	localcluster down
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/meshinit/meshinit/e2e/cluster"
)

func main() {
	var opts cluster.Options
	flag.StringVar(&opts.StateDir, "state-dir", "", "the cluster's state directory (default /var/lib/meshinit-e2e)")
	flag.StringVar(&opts.BinDir, "bin-dir", "", "the Kubernetes binaries (default $MESHINIT_CACHE/kubernetes-"+cluster.KubernetesVersion+"/bin)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: %s [flags] up|down\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	began := time.Now()
	opts.Logf = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%5.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, flag.Arg(0), opts); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cmd string, opts cluster.Options) error {
	switch cmd {
	case "up":
		c, err := cluster.Up(ctx, opts)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "use it:   export KUBECONFIG=%s\nstop it:  make cluster-down\n", c.Kubeconfig())
		fmt.Println(c.Kubeconfig())
		return nil
	case "down":
		return cluster.Down(ctx, opts)
	default:
		return fmt.Errorf("unknown command %q: want up or down", cmd)
	}
}

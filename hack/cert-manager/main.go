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

// Command cert-manager runs cert-manager's own controllers, from the Go
// packages of the cert-manager version this module pins, wired as
// cert-manager's controller and cainjector binaries wire them (their cmd/
// modules are not on the module proxy). The end-to-end tests run it against
// the local cluster, as the identities cert-manager's Helm chart creates:
//
//	cert-manager controller --kubeconfig FILE --cluster-resource-namespace NS
//	cert-manager cainjector --kubeconfig FILE
//
// controller runs the controllers of Issuers and ClusterIssuers, of
// Certificates (trigger, key manager, request manager, issuing, readiness,
// revision manager) and of CertificateRequests (the approver, the SelfSigned
// and CA issuers): every controller a self-signed or CA issuer needs, and no
// other issuer type. cainjector injects CAs into webhook configurations, API
// services and CRDs that ask for it. Neither runs leader election (one
// instance each), a metrics or health server, or cert-manager's webhook.
//
// It is a module of its own (hack/cert-manager/go.mod) so that the
// controllers' dependencies stay out of meshinit's go.mod; build.sh builds
// it into the cache.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "controller":
		err = runController(ctx, args)
	case "cainjector":
		err = runCAInjector(ctx, args)
	default:
		usage()
	}
	klog.Flush()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cert-manager %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: cert-manager controller|cainjector --kubeconfig FILE [flags]")
	os.Exit(2)
}

// flags is the flag set of a command: --kubeconfig and klog's -v.
func flags(name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the identity to run as (required)")
	klog.InitFlags(fs)
	return fs, kubeconfig
}

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

package webhook

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
)

// Version is set at build time with -ldflags -X.
var Version = "dev"

// Main is the webhook server's command line, what
// webhook/cmd/meshinit-webhook runs: it parses args (without the program
// name) into ServerOptions (and certs.Options), sets up a structured
// logger, runs Serve until ctx ends, and returns the exit code. With the
// first argument trust-redirector it runs that subcommand instead
// (trust.go).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == TrustCommand {
		return trustMain(ctx, args[1:], stdout, stderr, inClusterClient)
	}
	var o ServerOptions
	f, err := parseFlags(args, &o, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	if f.version {
		fmt.Fprintln(stdout, Version)
		return 0
	}
	if f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected argument %q: settings are flags\n", f.fs.Arg(0))
		return 2
	}
	log, err := newLogger(stderr, f.logFormat, f.logLevel)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	o.Log = log.WithName("webhook")

	cfg, err := ctrl.GetConfig()
	if err != nil {
		log.Error(err, "no API server configuration")
		return 1
	}
	log.Info("starting", "version", Version)
	if err := Serve(ctx, cfg, o); err != nil {
		log.Error(err, "webhook server failed")
		return 1
	}
	log.Info("stopped")
	return 0
}

// flags are the command's own flags, next to the server's.
type flags struct {
	fs                  *flag.FlagSet
	logFormat, logLevel string
	version             bool
}

// parseFlags parses args into o and the command's own flags.
func parseFlags(args []string, o *ServerOptions, stderr io.Writer) (flags, error) {
	f := flags{fs: flag.NewFlagSet("meshinit-webhook", flag.ContinueOnError)}
	f.fs.SetOutput(stderr)
	o.BindFlags(f.fs)
	config.RegisterFlags(f.fs) // --kubeconfig, read by ctrl.GetConfig
	f.fs.StringVar(&f.logFormat, "log-format", "json", "log format: json or text")
	f.fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info or error")
	f.fs.BoolVar(&f.version, "version", false, "print the version and exit")
	return f, f.fs.Parse(args)
}

// ParseArgs parses the webhook command's arguments, as its Deployment
// passes them, into the server's options: for tools that inspect an
// installation (kubectl meshinit reads where the certificates come from).
// It starts nothing. Defaults are those of the flags; certs.New fills in
// the certificate options' own.
func ParseArgs(args []string) (ServerOptions, error) {
	var o ServerOptions
	f, err := parseFlags(args, &o, io.Discard)
	if err == nil && f.fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q: settings are flags", f.fs.Arg(0))
	}
	return o, err
}

// newLogger returns a structured logger writing to w. logr's V(n) is slog
// level -n, so debug shows V(1) to V(4).
func newLogger(w io.Writer, format, level string) (logr.Logger, error) {
	levels := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "error": slog.LevelError}
	l, ok := levels[level]
	if !ok {
		return logr.Logger{}, fmt.Errorf("--log-level=%q: want debug, info or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "json":
		return logr.FromSlogHandler(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return logr.FromSlogHandler(slog.NewTextHandler(w, opts)), nil
	}
	return logr.Logger{}, fmt.Errorf("--log-format=%q: want json or text", format)
}

// Package command is the redirector's command line: it turns arguments into
// a redirect.Config and calls package redirect. It holds no redirect logic.
package command

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/meshinit/meshinit/redirect"
)

// Version is set at build time with -ldflags -X.
var Version = "dev"

const usage = `usage: redirector <command> [flags]

commands:
  apply     program this network namespace's iptables to redirect TCP to the proxy
  print     print the rules apply would write, touching nothing
  cleanup   remove meshinit's chains and rules, and nothing else
  version   print the version

Run "redirector apply -h" for the flags.
`

// Main runs the redirector with args (without the program name) and returns
// the exit code: 0 only when the command fully succeeded.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	name, args := args[0], args[1:]
	var err error
	switch name {
	case "apply", "print":
		var cfg redirect.Config
		if cfg, err = parseConfig(name, args, stderr); err != nil {
			break
		}
		plan := redirect.NewPlan(cfg)
		if name == "print" {
			_, err = io.WriteString(stdout, plan.String())
			break
		}
		log.Info("applying", "version", Version, "config", cfg.Fingerprint(), "args", cfg.Args())
		err = redirect.Apply(ctx, plan, redirect.Options{Logger: log})
	case "cleanup":
		if err = flag.NewFlagSet("cleanup", flag.ContinueOnError).Parse(args); err == nil {
			err = redirect.Cleanup(ctx, redirect.Options{Logger: log})
		}
	case "version":
		_, err = fmt.Fprintln(stdout, Version)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", name, usage)
		return 2
	}
	if err != nil {
		if err != flag.ErrHelp {
			log.Error(name+" failed", "error", err)
		}
		return 1
	}
	if name == "apply" || name == "cleanup" {
		log.Info(name + " done")
	}
	return 0
}

func parseConfig(name string, args []string, stderr io.Writer) (redirect.Config, error) {
	cfg := redirect.Defaults()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	redirect.BindFlags(fs, &cfg)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q: settings are flags like --include-inbound-ports=80", fs.Arg(0))
	}
	return cfg, cfg.Validate()
}

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
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.SetOutput(stderr)
		var cfg redirect.Config
		if cfg, err = redirect.ParseFlags(fs, args); err != nil {
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

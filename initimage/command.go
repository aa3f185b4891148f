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

package initimage

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/meshinit/meshinit/redirect"
)

// Version is what `redirector version` prints, set at build time with
// -ldflags "-X github.com/meshinit/meshinit/initimage.Version=..." (as
// internal/images does).
var Version = "dev"

const usage = `usage: redirector <command> [flags]

commands:
  apply     program this network namespace's iptables to redirect TCP (and DNS) to the proxy
  print     print the rules apply would write, touching nothing
  cleanup   remove meshinit's chains and rules, and nothing else
  version   print the version

Run "redirector apply -h" for the flags. Each command logs to stderr as
text (--log-format=text, the default: an init container's log is most often
read with kubectl logs) or JSON lines (--log-format=json, as the webhook
logs, for log pipelines); every line names the pod (namespace, pod, podUID)
from MESHINIT_POD_NAMESPACE, MESHINIT_POD_NAME and MESHINIT_POD_UID, which
meshinit's injectors set from the downward API. apply and cleanup give up after
--timeout (default 1m); an apply that fails removes the rules it applied.
apply writes what it did for each IP family, or why it failed, to
--termination-message-path (default /dev/termination-log, where the kubelet
reads a container's termination message) when that file exists.
`

// DefaultTimeout is --timeout's default: how long apply and cleanup may take.
const DefaultTimeout = time.Minute

// DefaultTerminationMessagePath is --termination-message-path's default:
// the file the kubelet mounts into a container (terminationMessagePath's
// default) and shows as its termination message once it has exited.
const DefaultTerminationMessagePath = "/dev/termination-log"

// Main runs the redirector with args (without the program name) and returns
// the exit code: 0 only when the command fully succeeded.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	log := newLogger(stderr, DefaultLogFormat)
	name, args := args[0], args[1:]
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := DefaultLogFormat
	fs.Func("log-format", "log format: json or text (default "+DefaultLogFormat+")", func(v string) error {
		if v != "json" && v != "text" {
			return fmt.Errorf("want json or text")
		}
		format = v
		return nil
	})
	var err error
	var outcomes []redirect.Outcome
	switch name {
	case "apply", "print":
		timeout := DefaultTimeout
		var message terminationMessage
		if name == "apply" {
			fs.DurationVar(&timeout, "timeout", DefaultTimeout, "give up, and remove the rules applied so far, after this long")
			fs.Func("termination-message-path", "file to write what apply did for each IP family, or why it failed, to; the default is written only when it exists (the kubelet creates it) "+
				"(default "+DefaultTerminationMessagePath+")", message.set)
			defer func() {
				if err != flag.ErrHelp {
					message.write(log, outcomes, err)
				}
			}()
		}
		var cfg redirect.Config
		cfg, err = redirect.ParseFlags(fs, args)
		log = newLogger(stderr, format)
		if err != nil {
			break
		}
		opts := redirect.Options{Runner: runner(log), Logger: log}
		var plan redirect.Plan
		if plan, err = redirect.ReadPlan(cfg, opts); err != nil {
			break
		}
		if name == "print" {
			_, err = io.WriteString(stdout, plan.String())
			break
		}
		log.Info("applying", "version", Version, "config", cfg.Fingerprint(), "args", cfg.Args())
		err = withTimeout(ctx, timeout, func(ctx context.Context) (err error) {
			outcomes, err = redirect.Apply(ctx, plan, opts)
			return err
		})
	case "cleanup":
		timeout := fs.Duration("timeout", DefaultTimeout, "give up after this long")
		err = fs.Parse(args)
		log = newLogger(stderr, format)
		if err == nil {
			err = withTimeout(ctx, *timeout, func(ctx context.Context) error {
				return redirect.Cleanup(ctx, redirect.Options{Runner: runner(log), Logger: log})
			})
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

// DefaultLogFormat is --log-format's default: text, for kubectl logs; JSON
// lines when asked (issue 26).
const DefaultLogFormat = "text"

// newLogger returns the logger of format, json or text (--log-format
// checked it), which adds the pod's namespace, name and UID (podAttrs) to
// every line.
func newLogger(w io.Writer, format string) *slog.Logger {
	var h slog.Handler = slog.NewJSONHandler(w, nil)
	if format == "text" {
		h = slog.NewTextHandler(w, nil)
	}
	return slog.New(h).With(podAttrs()...)
}

// podAttrs are the pod's namespace, name and UID as log attributes, from the
// environment variables the injectors set from the downward API
// (redirect.PodEnv), each that is set: a redirector run by hand (or an
// older injector's pod) has none.
func podAttrs() []any {
	var attrs []any
	for _, e := range redirect.PodEnv {
		if v := os.Getenv(e.Name); v != "" {
			attrs = append(attrs, slog.String(e.Attr, v))
		}
	}
	return attrs
}

// withTimeout runs f with ctx bounded by --timeout, and says in its error
// when that deadline, or a signal (ctx), ended the work.
func withTimeout(ctx context.Context, timeout time.Duration, f func(context.Context) error) error {
	if timeout <= 0 {
		return fmt.Errorf("invalid --timeout %s: must be positive", timeout)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := f(tctx)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		err = fmt.Errorf("stopped by a signal before it finished: %w", err)
	case tctx.Err() != nil:
		err = fmt.Errorf("the deadline passed (--timeout=%s) before it finished: %w", timeout, err)
	}
	return err
}

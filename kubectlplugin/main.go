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

package kubectlplugin

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/meshinit/meshinit/webhook"
)

// Version is the plugin's version, which `kubectl meshinit version`
// prints, set at build time with -ldflags -X (internal/images builds the
// plugin as the images' programs).
var Version = "dev"

// flagMeshinitNamespace names meshinit's own namespace when it cannot be
// found from the cluster-scoped objects (or there are several).
const flagMeshinitNamespace = "meshinit-namespace"

// Exit codes, for scripts.
const (
	// exitOK: nothing wrong (warnings, if any, are printed).
	exitOK = 0
	// exitProblem: a problem found, or the cluster could not be read
	// (meshinit not installed, a read refused, the API server unreachable):
	// either way, nothing shows that all is well.
	exitProblem = 1
	// exitUsage: a command line the command does not take.
	exitUsage = 2
)

// Main runs kubectl-meshinit with args (without the program name), writing
// its report to stdout and errors to stderr, and returns the exit code:
// 0 when nothing is wrong, 1 when something is (a problem found, meshinit
// not installed, a read refused), 2 for a command line it does not take.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// webhook.ParseArgs fills in the server's defaults, among them
	// controller-runtime's logger, which complains on stderr when nothing
	// set it; the plugin logs nothing through it.
	crlog.SetLogger(logr.Discard())
	return run(ctx, args, stdout, stderr, &options{now: time.Now, dial: dialTLS})
}

// run is Main with the clock and the endpoint dialer of o (tests pass
// their own).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, o *options) int {
	o.config = genericclioptions.NewConfigFlags(true)
	o.out = newOutputFlags()
	root := newCommand(o)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var found problemsFound
	var usage usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &found):
		return exitProblem
	case errors.As(err, &usage) || strings.HasPrefix(err.Error(), "unknown command"):
		fmt.Fprintf(stderr, "error: %s\nSee 'kubectl meshinit --help'.\n", clean(err.Error()))
		return exitUsage
	}
	fmt.Fprintf(stderr, "error: %s\n", clean(err.Error())) // an API error may quote the cluster
	return exitProblem
}

// problemsFound ends a command whose report (already printed) holds
// problems.
type problemsFound int

func (p problemsFound) Error() string { return plural(int(p), "problem", "problems") + " found" }

// usageError is a command line the command does not take.
type usageError struct{ error }

// options are the command line: kubectl's connection and output flags, and
// ours.
type options struct {
	config            *genericclioptions.ConfigFlags
	out               *outputFlags
	meshinitNamespace string
	allNamespaces     bool
	// pre: check --pre, before installing.
	pre bool
	// injector, optIn: what check --pre checks for.
	injector string
	optIn    []string
	// installNamespace: where check --pre expects helm install to go.
	installNamespace string
	// client: version --client, without the cluster.
	client bool
	now    func() time.Time
	dial   dialer
}

// dialer reads the certificates an endpoint serves (dialTLS).
type dialer func(ctx context.Context, addr, serverName string) ([]*x509.Certificate, error)

// clients reach the API server the kubeconfig and flags name.
type clients struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	// dryRun is kube keeping the API server's warnings to itself (audit
	// reads them from each response instead).
	dryRun kubernetes.Interface
	dial   dialer
}

func (o *options) clients() (*clients, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.UserAgent = "kubectl-meshinit/" + Version
	// check --pre asks a SelfSubjectAccessReview for each verb of each kind
	// the chart renders (about a hundred): client-go's default rate (5 a
	// second) would make that take twenty seconds.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 300
	}
	c := &clients{dial: o.dial}
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	quiet := rest.CopyConfig(cfg)
	quiet.WarningHandler, quiet.WarningHandlerWithContext = rest.NoWarnings{}, nil
	if c.dryRun, err = kubernetes.NewForConfig(quiet); err != nil {
		return nil, err
	}
	return c, nil
}

// scope is -n (default: the kubeconfig context's namespace) or -A.
func (o *options) scope() (scope, error) {
	if o.allNamespaces {
		return scope{}, nil
	}
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return scope{}, fmt.Errorf("kubeconfig: %w", err)
	}
	return scope{namespace: ns}, nil
}

// connect makes the clients, finds meshinit and takes the scope.
func (o *options) connect(ctx context.Context) (*clients, release, scope, error) {
	if err := o.out.validate(); err != nil {
		return nil, release{}, scope{}, err
	}
	c, err := o.clients()
	if err != nil {
		return nil, release{}, scope{}, err
	}
	s, err := o.scope()
	if err != nil {
		return nil, release{}, scope{}, err
	}
	r, err := locate(ctx, c.kube, o.meshinitNamespace)
	return c, r, s, err
}

// run is what a command does once connected: it prints its report to w
// and returns how many problems the report holds.
type runFunc func(ctx context.Context, c *clients, r release, s scope, w io.Writer, args []string) (problems int, err error)

// command is a command's RunE: connect, run, and end with problemsFound
// when the report holds problems.
func (o *options) command(run runFunc) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, r, s, err := o.connect(cmd.Context())
		if err != nil {
			return err
		}
		problems, err := run(cmd.Context(), c, r, s, cmd.OutOrStdout(), args)
		if err == nil && problems > 0 {
			err = problemsFound(problems)
		}
		return err
	}
}

// format is the format the print functions take: json (printJSON), wide
// or the table; print calls them for the tables and json only.
func (o *options) format(wide bool) string {
	if wide {
		return outputWide
	}
	return outputTable
}

func newCommand(o *options) *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-meshinit",
		Short: "What is wrong with meshinit in this cluster, and what to run about it",
		Long: `kubectl meshinit looks at meshinit in the cluster of your kubeconfig and says what is wrong and
the command that fixes it. Every finding has a code, explained at
` + codesURL + `<code>.md.

  check           the installation: CRD, policies, bindings, injector, webhook, certificates, pods
  check --pre     a cluster before installing: version, APIs, your RBAC, other meshes, PodSecurity
  pods            pods with a failing, outdated or missing meshinit-redirect, by workload
  audit           pods and workloads the RedirectPolicies in force now would refuse
  explain POD     a pod's redirect settings and the iptables rules they program
  version         the plugin's, the chart's and the running webhook's versions

Output: a table, -o wide, or kubectl's -o json|yaml|jsonpath=...|go-template=...
Exit codes: 0 nothing wrong (warnings may be printed); 1 a problem found, or the cluster
could not be read; 2 a command line it does not take.`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl meshinit"},
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	flags := root.PersistentFlags()
	o.config.AddFlags(flags)
	o.out.addFlags(flags)
	flags.StringVar(&o.meshinitNamespace, flagMeshinitNamespace, "", "meshinit's namespace (default: found from its cluster-wide objects)")
	completions(root, o)

	args := func(n int, what string) cobra.PositionalArgs {
		return func(c *cobra.Command, args []string) error {
			if len(args) != n {
				return usageError{fmt.Errorf("%s takes %s, got %q", c.Name(), what, args)}
			}
			return nil
		}
	}
	allNamespaces := func(c *cobra.Command) *cobra.Command {
		c.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "all namespaces, not only -n's (default: the context's)")
		return c
	}
	check := &cobra.Command{
		Use:   "check [--pre]",
		Short: "Check the installation (or, with --pre, a cluster before installing)",
		Args:  args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.pre {
				return o.preCheck(cmd)
			}
			return o.command(func(ctx context.Context, c *clients, r release, _ scope, w io.Writer, _ []string) (int, error) {
				in, err := gatherInstall(ctx, c, r)
				if err != nil {
					return 0, err
				}
				findings := runChecks(in, o.now())
				findings = append(findings, checkDataPlane(ctx, c, in)...)
				rep := CheckReport{in.Release, findings, countProblems(findings)}
				return rep.Problems, o.out.print(w, "CheckReport", rep, func(w io.Writer, wide bool) error {
					return printFindings(w, o.format(wide), in.Release, findings)
				})
			})(cmd, nil)
		},
	}
	check.Flags().BoolVar(&o.pre, "pre", false, "check the cluster before installing meshinit: Kubernetes version, APIs, your RBAC to install, other meshes, PodSecurity of namespaces to opt in")
	check.Flags().StringVar(&o.injector, "injector", "webhook", "with --pre: the chart value injector to check for, webhook or policy")
	check.Flags().StringSliceVar(&o.optIn, "opt-in", nil, "with --pre: namespaces you will label "+webhook.NamespaceLabel+"=enabled (those labelled already are checked too)")
	check.Flags().StringVar(&o.installNamespace, "install-namespace", "meshinit-system", "with --pre: the namespace helm install will use")
	root.AddCommand(
		check,
		allNamespaces(&cobra.Command{
			Use:   "pods [-n NAMESPACE | -A]",
			Short: "Pods of opted-in namespaces: current, stale, failing or not injected and why, by workload",
			Args:  args(0, "no arguments"),
			RunE: o.command(func(ctx context.Context, c *clients, r release, s scope, w io.Writer, _ []string) (int, error) {
				rep, err := podsReport(ctx, c, r, s)
				if err != nil {
					return 0, err
				}
				return rep.Problems, o.out.print(w, "PodsReport", rep, func(w io.Writer, wide bool) error {
					return printPods(w, o.format(wide), rep)
				})
			}),
		}),
		allNamespaces(&cobra.Command{
			Use:   "audit [-n NAMESPACE | -A]",
			Short: "Pods and workloads the RedirectPolicies in force now would refuse (server-side dry runs)",
			Args:  args(0, "no arguments"),
			RunE: o.command(func(ctx context.Context, c *clients, r release, s scope, w io.Writer, _ []string) (int, error) {
				rep, err := auditRun(ctx, c, r, s)
				if err != nil {
					return 0, err
				}
				return rep.Problems, o.out.print(w, "AuditReport", rep, func(w io.Writer, _ bool) error {
					return printAudit(w, outputTable, rep)
				})
			}),
		}),
		&cobra.Command{
			Use:               "explain POD [-n NAMESPACE]",
			Short:             "A pod's redirect settings and the iptables rules they program, without exec",
			Args:              args(1, "one pod name"),
			ValidArgsFunction: completePods(o),
			RunE: o.command(func(ctx context.Context, c *clients, r release, s scope, w io.Writer, args []string) (int, error) {
				e, err := explainPod(ctx, c, r, s.namespace, args[0])
				if err != nil {
					return 0, err
				}
				problems := 0
				if e.Problem {
					problems = 1
				}
				return problems, o.out.print(w, "Explanation", e, func(w io.Writer, _ bool) error {
					return printExplain(w, outputTable, e)
				})
			}),
		},
		o.versionCommand(args(0, "no arguments")),
	)
	return root
}

// explainPod reads what `explain` needs: the pod, its namespace's labels,
// its workload's owners and the installed configuration.
func explainPod(ctx context.Context, c *clients, r release, namespace, name string) (Explanation, error) {
	cfg, _, err := loadConfig(ctx, c.kube, &r)
	if err != nil {
		return Explanation{}, err
	}
	pod, err := c.kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return Explanation{}, readError("get", "pods", namespace, err)
	}
	ns, err := c.kube.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err != nil {
		return Explanation{}, readError("get", "namespaces", "", err)
	}
	o := owners{}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		switch ref.Kind {
		case "ReplicaSet":
			rs, err := c.kube.AppsV1().ReplicaSets(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				return Explanation{}, readError("get", "replicasets.apps", namespace, err)
			}
			o.add(ref.Kind, rs.ObjectMeta)
		case "Job":
			job, err := c.kube.BatchV1().Jobs(namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				return Explanation{}, readError("get", "jobs.batch", namespace, err)
			}
			o.add(ref.Kind, job.ObjectMeta)
		}
	}
	return explain(pod, ns.Labels, cfg, o), nil
}

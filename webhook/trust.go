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
	"strings"

	"github.com/distribution/reference"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/meshinit/meshinit/api/v1alpha1"
)

// TrustCommand is the subcommand that carries the redirector trust over an
// upgrade or rollback: the chart's pre-upgrade and pre-rollback hook Job
// runs `meshinit-webhook trust-redirector --namespace NS --name NAME
// --image REF` before Helm changes anything.
const TrustCommand = "trust-redirector"

// TrustOptions are the trust-redirector subcommand's flags.
type TrustOptions struct {
	Namespace string // of the RedirectorTrust, the release's
	Name      string // the RedirectorTrust's name
	Image     string // the redirector image the release is moving to
}

// trustSpec is the RedirectorTrust's spec once the release moves to image,
// from its spec old: with no current, image becomes current (previous
// untouched); with current image, nothing changes; otherwise the old
// current becomes previous and image current. The chart renders current;
// previous is never rendered, only written here, so that Helm's 3-way
// merge leaves it alone, on helm rollback too. It returns the new spec,
// and whether it differs from old.
func trustSpec(old v1alpha1.RedirectorTrustSpec, image string) (v1alpha1.RedirectorTrustSpec, bool) {
	spec := old
	switch {
	case old.Current == image:
		return spec, false
	case old.Current != "":
		spec.Previous = old.Current
	}
	spec.Current = image
	return spec, true
}

// trustMain is the trust-redirector subcommand, args without the
// subcommand's name; newClient makes its API client once the flags are
// valid. It returns the exit code: 2 for invalid arguments, 1 for an API
// error.
func trustMain(ctx context.Context, args []string, stdout, stderr io.Writer, newClient func() (client.Client, error)) int {
	o, err := parseTrustFlags(args, stderr)
	var printed flagError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &printed):
		return 2 // the flag package printed it, with the usage
	case err != nil:
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(stderr, "%s: %s\n", TrustCommand, line)
		}
		return 2
	}
	c, err := newClient()
	if err != nil {
		fmt.Fprintf(stderr, "%s: no API server configuration: %v\n", TrustCommand, err)
		return 1
	}
	line, err := TrustRedirector(ctx, c, o)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", TrustCommand, err)
		return 1
	}
	fmt.Fprintln(stdout, line)
	return 0
}

// flagError is an error the flag package printed itself.
type flagError struct{ error }

// parseTrustFlags parses and checks the subcommand's flags. The errors it
// returns, one a line, are for the caller to print, except flagError.
func parseTrustFlags(args []string, stderr io.Writer) (TrustOptions, error) {
	var o TrustOptions
	fs := flag.NewFlagSet("meshinit-webhook "+TrustCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Namespace, "namespace", "", "namespace of the RedirectorTrust (the release's); required")
	fs.StringVar(&o.Name, "name", "", "name of the RedirectorTrust (meshinit.io/v1alpha1) naming the trusted redirector images; required")
	fs.StringVar(&o.Image, "image", "", "the redirector image the release moves to; required")
	config.RegisterFlags(fs) // --kubeconfig, read by ctrl.GetConfig
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return o, err
	} else if err != nil {
		return o, flagError{err}
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q: settings are flags", fs.Arg(0))
	}
	var errs []error
	for _, f := range []struct {
		name, value string
		check       func(string) []string
	}{
		{"namespace", o.Namespace, validation.IsDNS1123Label},
		{"name", o.Name, validation.IsDNS1123Subdomain},
		{"image", o.Image, checkImage},
	} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("--%s: required", f.name))
		} else if msgs := f.check(f.value); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--%s=%q: %s", f.name, f.value, strings.Join(msgs, "; ")))
		}
	}
	return o, errors.Join(errs...)
}

// TrustRedirector moves the RedirectorTrust o.Namespace/o.Name to o.Image
// (trustSpec), retrying on conflicts with other writers, and returns the
// line that says what it did. It never creates or deletes the
// RedirectorTrust: Helm owns its existence. Without it (the installed
// release keeps no redirector trust, or the cluster does not even serve
// the kind) there is nothing to carry over, and it says so.
func TrustRedirector(ctx context.Context, c client.Client, o TrustOptions) (string, error) {
	what := fmt.Sprintf("RedirectorTrust %s/%s", o.Namespace, o.Name)
	key := types.NamespacedName{Namespace: o.Namespace, Name: o.Name}
	var line string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var trust v1alpha1.RedirectorTrust
		err := c.Get(ctx, key, &trust)
		switch {
		case apierrors.IsNotFound(err):
			line = fmt.Sprintf("%s: not found: the installed release keeps no redirector trust, nothing carried over to %q", what, o.Image)
			return nil
		case meta.IsNoMatchError(err):
			line = fmt.Sprintf("%s: the API server does not serve the kind (no CRD redirectortrusts.%s): the installed release keeps no redirector trust, nothing carried over to %q", what, v1alpha1.GroupName, o.Image)
			return nil
		case err != nil:
			return err
		}
		spec, changed := trustSpec(trust.Spec, o.Image)
		if !changed {
			line = fmt.Sprintf("%s unchanged: current %q", what, o.Image)
			return nil
		}
		was := trust.Spec.Current
		trust.Spec = spec
		if err := c.Update(ctx, &trust, client.FieldOwner("meshinit-"+TrustCommand)); err != nil {
			return err
		}
		line = fmt.Sprintf("%s: current %q, previous %q (was current %q)", what, spec.Current, spec.Previous, was)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("%s to %q: %w", what, o.Image, err)
	}
	return line, nil
}

// TrustClient is an API client for RedirectorTrusts (its scheme knows
// api/v1alpha1 alone) with cfg's server and credentials.
func TrustClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// inClusterClient is the subcommand's API client, configured as Main's
// (ctrl.GetConfig: --kubeconfig, $KUBECONFIG, in-cluster).
func inClusterClient() (client.Client, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, err
	}
	return TrustClient(cfg)
}

// checkImage returns what is wrong with the image reference ref, nothing
// when it is one: parsed as the kubelet parses a pod's image
// (github.com/distribution/reference), without normalising it, as the
// trust policy compares the string the pod holds.
func checkImage(ref string) []string {
	r, err := reference.Parse(ref)
	if err != nil {
		return []string{fmt.Sprintf("not an image reference ([registry/]repository[:tag][@sha256:digest], the repository lowercase): %v", err)}
	}
	// The parser bounds the repository path; the name with its registry is
	// held to the same 255 characters, as earlier versions of it did.
	if n, ok := r.(reference.Named); ok && len(n.Name()) > reference.RepositoryNameTotalLengthMax {
		return []string{fmt.Sprintf("the image name is %d characters long, more than %d", len(n.Name()), reference.RepositoryNameTotalLengthMax)}
	}
	return nil
}

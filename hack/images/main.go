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

// Command images is the `make images` front end: it parses its flags and
// builds meshinit's container images as reproducible OCI archives with
// internal/images (whose documentation describes the images), by default
// into _output/images:
//
//	go run ./hack/images -arch amd64,arm64 [-version V] [-push PREFIX]
//
// It prints one line per archive written ("<file>\t<ref>\t<digest>\t<n>
// bytes") and per index pushed; -v also shows apt's output, on stderr.
//
// With -plugin FILE it builds only kubectl-meshinit, for this machine, into
// FILE, as the images' programs are built (`make plugin`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/meshinit/meshinit/internal/images"
	"github.com/meshinit/meshinit/internal/images/oci"
)

func main() {
	o, plugin, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2) // already reported, with the usage
	}
	if plugin != "" {
		if err := images.BuildPlugin(context.Background(), "", runtime.GOOS, runtime.GOARCH, o.Version, plugin); err != nil {
			fmt.Fprintln(os.Stderr, "images:", err)
			os.Exit(1)
		}
		fmt.Println(plugin)
		return
	}
	o.Log = os.Stdout
	if _, err := images.Build(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

// parseFlags turns the command line into Build's options (Log aside);
// AptLog is stderr with -v. plugin is -plugin's file. Usage and errors go
// to output.
func parseFlags(args []string, output io.Writer) (o images.Options, plugin string, err error) {
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	fs.SetOutput(output)
	archs := fs.String("arch", runtime.GOARCH, "comma-separated architectures: "+strings.Join(oci.SupportedArchs(), ", "))
	version := fs.String("version", "", "image version and tag (default: the chart's appVersion)")
	out := fs.String("out", "_output/images", "directory the archives are written to")
	push := fs.String("push", "", "registry prefix to push every index to as <prefix>/<image>:<version>, e.g. registry.example.com/meshinit")
	only := fs.String("images", strings.Join(images.Names(), ","), "comma-separated images to build")
	refresh := fs.Bool("refresh", false, "fetch Debian's package lists again first (new security updates); otherwise the cached lists are reused")
	verbose := fs.Bool("v", false, "show apt's output")
	fs.StringVar(&plugin, "plugin", "", "build only kubectl-meshinit, for this machine, into this file (and -version)")
	if err := fs.Parse(args); err != nil {
		return images.Options{}, "", err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected arguments %q", fs.Args())
		fmt.Fprintln(output, err)
		fs.Usage()
		return images.Options{}, "", err
	}
	o = images.Options{
		Archs:         split(*archs),
		Version:       *version,
		Out:           *out,
		Only:          split(*only),
		Push:          *push,
		RefreshDebian: *refresh,
	}
	if *verbose {
		o.AptLog = os.Stderr
	}
	return o, plugin, nil
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

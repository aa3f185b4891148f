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
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// completionTimeout bounds what completing a name may ask the API server.
const completionTimeout = 5 * time.Second

// completions sets up cobra's shell completion: the completion command
// (`kubectl-meshinit completion bash|zsh|fish|powershell`, and kubectl's
// plugin completion through a kubectl_complete-meshinit that runs
// `kubectl-meshinit __complete "$@"`), -o's formats, and -n's and
// --context's names from the cluster and the kubeconfig.
func completions(root *cobra.Command, o *options) {
	root.CompletionOptions = cobra.CompletionOptions{HiddenDefaultCmd: false}
	_ = root.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return o.out.formats(), cobra.ShellCompDirectiveNoFileComp
	})
	_ = root.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		c, err := o.clients()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		list, err := c.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return namesFrom(list.Items, prefix, func(ns corev1.Namespace) string { return ns.Name }), cobra.ShellCompDirectiveNoFileComp
	})
	_ = root.RegisterFlagCompletionFunc("context", func(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		raw, err := o.config.ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return namesFrom(slices.Sorted(maps.Keys(raw.Contexts)), prefix, func(n string) string { return n }), cobra.ShellCompDirectiveNoFileComp
	})
}

// completePods completes explain's POD: the pods of -n's namespace.
func completePods(o *options) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := o.clients()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		s, err := o.scope()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		list, err := c.kube.CoreV1().Pods(s.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		return namesFrom(list.Items, prefix, func(p corev1.Pod) string { return p.Name }), cobra.ShellCompDirectiveNoFileComp
	}
}

// namesFrom are the names (name of each item) that begin with prefix.
func namesFrom[T any](items []T, prefix string, name func(T) string) []string {
	var out []string
	for _, it := range items {
		if n := name(it); strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

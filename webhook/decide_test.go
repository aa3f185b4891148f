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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDecide(t *testing.T) {
	c := &Config{Namespace: "meshinit-system"}
	enabled := map[string]string{NamespaceLabel: "enabled"}
	disabled := map[string]string{NamespaceLabel: "disabled"}
	label := func(v string) map[string]string { return map[string]string{PodLabel: v} }
	for _, tc := range []struct {
		name        string
		namespace   string
		nsLabels    map[string]string
		podLabels   map[string]string
		hostNetwork bool
		want        Decision
		err         string
	}{
		{name: "namespace enabled", nsLabels: enabled, want: Decision{Inject: true, Reason: ReasonNamespaceOptedIn}},
		{name: "pod true", podLabels: label("true"), want: Decision{Inject: true, Reason: ReasonPodOptedIn}},
		{name: "namespace disabled beats pod true", nsLabels: disabled, podLabels: label("true"), want: Decision{Reason: ReasonNamespaceOptedOut}},
		{name: "pod true in a namespace with another value", nsLabels: map[string]string{NamespaceLabel: "off"}, podLabels: label("true"), want: Decision{Inject: true, Reason: ReasonPodOptedIn}},
		{name: "pod false beats namespace enabled", nsLabels: enabled, podLabels: label("false"), want: Decision{Reason: ReasonPodOptedOut}},
		{name: "no labels", want: Decision{Reason: ReasonNotOptedIn}},
		{name: "namespace disabled", nsLabels: disabled, want: Decision{Reason: ReasonNamespaceOptedOut}},
		{name: "namespace label other value", nsLabels: map[string]string{NamespaceLabel: "true"}, want: Decision{Reason: ReasonNotOptedIn}},
		{name: "hostNetwork", nsLabels: enabled, podLabels: label("true"), hostNetwork: true, want: Decision{Reason: ReasonHostNetwork}},
		{name: "kube-system", namespace: "kube-system", nsLabels: enabled, podLabels: label("true"), want: Decision{Reason: ReasonExcludedNS}},
		{name: "own namespace", namespace: "meshinit-system", podLabels: label("true"), want: Decision{Reason: ReasonExcludedNS}},
		{name: "pod false in kube-system", namespace: "kube-system", podLabels: label("false"), want: Decision{Reason: ReasonPodOptedOut}},
		{name: "invalid pod label", nsLabels: enabled, podLabels: label("True"), want: Decision{Reason: ReasonInvalidLabel}, err: `invalid label meshinit.io/inject "True"`},
		{name: "invalid pod label on hostNetwork", podLabels: label(""), hostNetwork: true, want: Decision{Reason: ReasonInvalidLabel}, err: `must be "true" or "false"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := tc.namespace
			if ns == "" {
				ns = "app"
			}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tc.podLabels}, Spec: corev1.PodSpec{HostNetwork: tc.hostNetwork}}
			got := decide(subject{pod: pod, namespace: ns, namespaceLabels: tc.nsLabels}, c)
			if got.Inject != tc.want.Inject || got.Reason != tc.want.Reason {
				t.Errorf("decide = %+v, want %+v", got, tc.want)
			}
			if (got.Err == nil) != (tc.err == "") || (got.Err != nil && !strings.Contains(got.Err.Error(), tc.err)) {
				t.Errorf("decide error = %v, want containing %q", got.Err, tc.err)
			}
		})
	}
}

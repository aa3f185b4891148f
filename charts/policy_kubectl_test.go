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

package charts_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func manifest(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	b, err := yaml.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestKubectlDryRun: `kubectl apply --dry-run=server` of a violating pod
// prints the policy's message and stores nothing; of a compliant pod it
// succeeds, and stores nothing either.
func TestKubectlDryRun(t *testing.T) {
	c := apiServer(t)
	bad := pod("dry-bad", injected, annotations(excludeInbound, "8443"))
	_, stderr, err := c.Kubectl(manifest(t, bad), "apply", "--dry-run=server", "-n", "team-a", "-f", "-")
	want := `Error from server (Forbidden): error when creating "STDIN": pods "dry-bad" is forbidden: ValidatingAdmissionPolicy 'meshinit-redirectpolicy' with binding 'meshinit-redirectpolicy-cluster' denied request: ` + msgExcluded8443
	if err == nil || strings.TrimSpace(stderr) != want {
		t.Errorf("violating pod: %v\nstderr: %s\nwant:   %s", err, stderr, want)
	}
	good := pod("dry-good", injected)
	stdout, stderr, err := c.Kubectl(manifest(t, good), "apply", "--dry-run=server", "-n", "team-a", "-f", "-")
	if err != nil || strings.TrimSpace(stdout) != "pod/dry-good created (server dry run)" {
		t.Errorf("compliant pod: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
	}
	for _, name := range []string{"dry-bad", "dry-good"} {
		if _, stderr, err := c.Kubectl("", "get", "pod", "-n", "team-a", name); err == nil || !strings.Contains(stderr, "NotFound") {
			t.Errorf("pod %s was stored by a dry run: %v %s", name, err, stderr)
		}
	}
}

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
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/internal/testkit"
)

// testConfig is the configuration every case starts from.
const testConfig = `
image: ghcr.io/meshinit/redirector:test
namespace: meshinit-system
`

// podCase is one file of testdata/pods: a pod and the cluster it is
// created in.
type podCase struct {
	// Namespace the pod is created in. Default: app.
	Namespace       string            `json:"namespace"`
	NamespaceLabels map[string]string `json:"namespaceLabels"`
	// Config is merged over testConfig.
	Config map[string]any `json:"config"`
	Pod    map[string]any `json:"pod"`
	// Reinvoke, when set (even empty), has Pod injected first, then these
	// JSON patch operations applied to the injected pod (what a later
	// webhook or the pod's author changed): the case is the review of the
	// result, as on reinvocation or when a pod is re-created from an
	// injected one. The injected pod is the webhook's own, so these cases
	// follow the container as it changes.
	Reinvoke []map[string]any `json:"reinvoke"`
}

// goldenResult is what a case's .golden.yaml file holds.
type goldenResult struct {
	Outcome  Outcome  `json:"outcome"`
	Reason   Reason   `json:"reason,omitempty"`
	Allowed  bool     `json:"allowed"`
	Message  string   `json:"message,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Patch lists the patch's operations ("op path"), when there is one.
	Patch []string `json:"patch,omitempty"`
	// Pod is the pod after the patch, when there is one.
	Pod map[string]any `json:"pod,omitempty"`
}

func loadCase(t *testing.T, path string) (podCase, Config) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pc podCase
	if err := yaml.UnmarshalStrict(data, &pc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if pc.Namespace == "" {
		pc.Namespace = "app"
	}
	base := map[string]any{}
	if err := yaml.Unmarshal([]byte(testConfig), &base); err != nil {
		t.Fatal(err)
	}
	for k, v := range pc.Config {
		base[k] = v
	}
	raw, _ := yaml.Marshal(base)
	c, err := ParseConfig(raw, "")
	if err != nil {
		t.Fatalf("%s: config: %v", path, err)
	}
	return pc, c
}

// review runs one pod through Handle as the API server would send it.
func review(t testing.TB, h *Handler, namespace string, pod []byte) admission.Response {
	t.Helper()
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "test",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: namespace,
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: pod},
	}}
	return h.Handle(context.Background(), req)
}

func staticLabels(labels map[string]string) NamespaceLabels {
	return func(context.Context, string) (map[string]string, error) { return labels, nil }
}

// applyPatch applies a response's patch to pod JSON, failing the test when
// the patch is not valid for it.
func applyPatch(t testing.TB, pod []byte, resp admission.Response) []byte {
	t.Helper()
	if len(resp.Patches) == 0 {
		return pod
	}
	return applyOps(t, pod, resp.Patches)
}

// applyOps applies JSON patch operations (as anything that marshals to a
// JSON patch) to pod JSON, failing the test when they are not valid for it.
func applyOps(t testing.TB, pod []byte, ops any) []byte {
	t.Helper()
	raw, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		t.Fatalf("invalid patch %s: %v", raw, err)
	}
	out, err := patch.Apply(pod)
	if err != nil {
		t.Fatalf("patch %s does not apply: %v", raw, err)
	}
	return out
}

func TestGoldenPods(t *testing.T) {
	files, err := filepath.Glob("testdata/pods/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases in testdata/pods: %v", err)
	}
	for _, file := range files {
		if strings.HasSuffix(file, ".golden.yaml") {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			pc, c := loadCase(t, file)
			h := NewHandler(c, staticLabels(pc.NamespaceLabels))
			pod, err := json.Marshal(pc.Pod)
			if err != nil {
				t.Fatal(err)
			}
			if pc.Reinvoke != nil {
				pod = reinvoked(t, h, pc, pod)
			}
			resp := review(t, h, pc.Namespace, pod)
			var decoded corev1.Pod
			if err := json.Unmarshal(pod, &decoded); err != nil {
				t.Fatal(err)
			}
			r := mutate(subject{pod: &decoded, namespace: pc.Namespace, namespaceLabels: pc.NamespaceLabels}, &c)
			got := goldenResult{Outcome: r.Outcome, Reason: r.Reason, Allowed: resp.Allowed, Warnings: resp.Warnings}
			if resp.Result != nil {
				got.Message = resp.Result.Message
			}
			for _, op := range resp.Patches {
				got.Patch = append(got.Patch, op.Operation+" "+op.Path)
			}
			if len(resp.Patches) > 0 {
				patched := applyPatch(t, pod, resp)
				if err := json.Unmarshal(patched, &got.Pod); err != nil {
					t.Fatal(err)
				}
				// A second review of the injected pod changes nothing.
				if again := review(t, h, pc.Namespace, patched); !again.Allowed || len(again.Patches) > 0 {
					t.Errorf("second review of the injected pod: allowed=%v patches=%v", again.Allowed, again.Patches)
				}
			}
			compareGolden(t, strings.TrimSuffix(file, ".yaml")+".golden.yaml", got)
		})
	}
}

// reinvoked injects pod and applies the case's Reinvoke operations.
func reinvoked(t *testing.T, h *Handler, pc podCase, pod []byte) []byte {
	t.Helper()
	first := review(t, h, pc.Namespace, pod)
	if len(first.Patches) == 0 {
		t.Fatalf("reinvoke: the pod is not injected first: %+v", first.Result)
	}
	return applyOps(t, applyPatch(t, pod, first), pc.Reinvoke)
}

func compareGolden(t *testing.T, path string, v any) {
	t.Helper()
	got, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Golden(t, path, got)
}

// TestReinvocationAfterDefaulting feeds the injected pod back the way the
// API server does on reinvocation or when a controller re-creates it from a
// template that carries the container: with the container's fields
// defaulted. Nothing changes.
func TestReinvocationAfterDefaulting(t *testing.T) {
	pc, c := loadCase(t, "testdata/pods/namespace-enabled.yaml")
	h := NewHandler(c, staticLabels(pc.NamespaceLabels))
	pod, _ := json.Marshal(pc.Pod)
	var injected corev1.Pod
	if err := json.Unmarshal(applyPatch(t, pod, review(t, h, pc.Namespace, pod)), &injected); err != nil {
		t.Fatal(err)
	}
	ic := &injected.Spec.InitContainers[0]
	ic.TerminationMessagePath = corev1.TerminationMessagePathDefault
	ic.Resources.Requests = corev1.ResourceList{}
	injected.Name, injected.GenerateName = "", "web-7d4b9-"
	again, _ := json.Marshal(&injected)
	if resp := review(t, h, pc.Namespace, again); !resp.Allowed || len(resp.Patches) > 0 {
		t.Errorf("review of a defaulted, re-created injected pod: allowed=%v patches=%v", resp.Allowed, resp.Patches)
	}
}

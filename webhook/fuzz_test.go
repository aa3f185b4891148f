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
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/meshinit/meshinit/redirect"
)

// checkResponse asserts the fuzz contract: a response either allows (with
// a patch that applies to the pod, after which a second review changes
// nothing) or refuses with a message.
func checkResponse(t *testing.T, h *Handler, pod []byte, resp admission.Response) {
	t.Helper()
	if !resp.Allowed {
		if resp.Result == nil || resp.Result.Message == "" {
			t.Fatalf("refusal without a message: %+v", resp.Result)
		}
		if len(resp.Patches) > 0 {
			t.Fatalf("refusal with a patch: %v", resp.Patches)
		}
		return
	}
	if len(resp.Patches) == 0 {
		return
	}
	patched := applyPatch(t, pod, resp)
	if again := review(t, h, "app", patched); !again.Allowed || len(again.Patches) > 0 {
		t.Fatalf("second review: allowed=%v patches=%v result=%+v\npod: %s", again.Allowed, again.Patches, again.Result, patched)
	}
}

// FuzzHandlePod fuzzes the parts of a pod the webhook reads.
func FuzzHandlePod(f *testing.F) {
	f.Add("web", "true", false, "8080,9000-9100", "9050", "5432", "10.0.0.0/8", "10.96.0.1", "migrate,proxy", true, false)
	f.Add("", "", false, "*", "", "", "*", "", "", true, true)
	f.Add("x", "false", true, "http", "*", "70000", "::/0", "fd00::/8,*", "meshinit-redirect", false, false)
	f.Add("y", "yes", false, "", "", "", "", "", "meshinit-redirect,meshinit-redirect", true, false)
	f.Fuzz(func(t *testing.T, name, label string, hostNetwork bool, inIn, exIn, exOut, inCIDR, exCIDR, inits string, nsEnabled, last bool) {
		h := testHandler(t, nil)
		if nsEnabled {
			h.namespaces = staticLabels(map[string]string{NamespaceLabel: "enabled"})
		}
		if last {
			h.config.Placement = PlaceLast
		}
		pod := corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, GenerateName: "p-", Labels: map[string]string{PodLabel: label}},
			Spec:       corev1.PodSpec{HostNetwork: hostNetwork, Containers: []corev1.Container{{Name: "app"}}},
		}
		pod.Annotations = map[string]string{}
		for i, v := range []string{inIn, exIn, exOut, inCIDR, exCIDR} {
			if v != "" {
				pod.Annotations[redirect.AnnotationNames()[i]] = v
			}
		}
		for n := range strings.SplitSeq(inits, ",") {
			if n != "" {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: n})
			}
		}
		raw, err := json.Marshal(&pod)
		if err != nil {
			t.Fatal(err)
		}
		checkResponse(t, h, raw, review(t, h, "app", raw))
	})
}

// FuzzHandleRaw fuzzes the object bytes themselves, sent over HTTP the way
// the API server sends them.
func FuzzHandleRaw(f *testing.F) {
	f.Add([]byte(plainPod))
	f.Add([]byte(`{"metadata":{"name":"a","annotations":null},"spec":{"containers":[{}],"initContainers":null}}`))
	f.Add([]byte(`{"metadata":{"name":"a","labels":{"meshinit.io/inject":"true"},"annotations":{"meshinit.io/status":"x"}},"spec":{"containers":[{}],"initContainers":[{"name":"meshinit-redirect"}]}}`))
	f.Add([]byte(`{"metadata":{"name":"a"},"spec":{"containers":[{}]},"spec":null}`))
	f.Add([]byte(`{"metadata":{"name":"a"},"spec":{"containers":[{}]}} x`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		h := testHandler(t, map[string]string{NamespaceLabel: "enabled"})
		hook := &admission.Webhook{Handler: h}
		_, r, _ := serveReview(t, hook, "application/json", reviewBody(podRequest(string(raw))))
		if !r.Allowed {
			if r.Result == nil || r.Result.Message == "" || len(r.Patch) > 0 {
				t.Fatalf("refusal without a message or with a patch: %+v", r)
			}
			return
		}
		if len(r.Patch) == 0 {
			return
		}
		patch, err := jsonpatch.DecodePatch(r.Patch)
		if err != nil {
			t.Fatalf("invalid patch %s: %v", r.Patch, err)
		}
		patched, err := patch.Apply(raw)
		if err != nil {
			t.Fatalf("patch %s does not apply to %s: %v", r.Patch, raw, err)
		}
		if again := review(t, h, "app", patched); !again.Allowed || len(again.Patches) > 0 {
			t.Fatalf("second review: allowed=%v patches=%v result=%+v", again.Allowed, again.Patches, again.Result)
		}
	})
}

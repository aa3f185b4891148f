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
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/webhook"
)

// An injector is meshinit's webhook (package webhook), in-process, with the
// configuration the chart renders for some values: the pods it injects carry
// exactly the init container the webhook writes, which the policy must
// recognise as meshinit's.
type injector struct {
	handler *webhook.Handler
	config  webhook.Config
}

// newInjector renders the chart with values and loads the webhook's config
// file from its ConfigMap, as the webhook's pods do.
func newInjector(values map[string]any) (*injector, error) {
	objs, err := charts.Objects(charts.Options{Namespace: releaseNamespace, Values: values}, false)
	if err != nil {
		return nil, err
	}
	cms := charts.Find(objs, "ConfigMap", "meshinit-webhook")
	if len(cms) != 1 {
		return nil, fmt.Errorf("the chart renders %d ConfigMaps meshinit-webhook, want 1", len(cms))
	}
	data, _, _ := unstructured.NestedString(cms[0].Object, "data", "config.yaml")
	cfg, err := webhook.ParseConfig([]byte(data), releaseNamespace)
	if err != nil {
		return nil, err
	}
	enabled := func(context.Context, string) (map[string]string, error) {
		return map[string]string{namespaceLabel: "enabled"}, nil
	}
	return &injector{handler: webhook.NewHandler(cfg, enabled), config: cfg}, nil
}

// inject reviews p as the API server would ask the webhook to on create (in
// an opted-in namespace) and returns the pod with the webhook's patch
// applied; an error when the webhook does not inject it.
func (in *injector) inject(p *corev1.Pod) (*corev1.Pod, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	ctx := log.IntoContext(context.Background(), logr.Discard())
	resp := in.handler.Handle(ctx, admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       "test",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: "team-a",
		Operation: admissionv1.Create,
		Object:    runtime.RawExtension{Raw: raw},
	}})
	if !resp.Allowed || len(resp.Patches) == 0 {
		return nil, fmt.Errorf("the webhook did not inject pod %s: allowed %v, %d patches, %v", p.Name, resp.Allowed, len(resp.Patches), resp.Result)
	}
	patch, err := json.Marshal(resp.Patches)
	if err != nil {
		return nil, err
	}
	decoded, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, err
	}
	patched, err := decoded.Apply(raw)
	if err != nil {
		return nil, err
	}
	var out corev1.Pod
	return &out, json.Unmarshal(patched, &out)
}

var (
	defaultInjectorOnce sync.Once
	defaultInjectorVal  *injector
	defaultInjectorErr  error
)

// defaultInjector is the webhook with the chart's default values (testValues
// change only the policy).
func defaultInjector() *injector {
	defaultInjectorOnce.Do(func() { defaultInjectorVal, defaultInjectorErr = newInjector(nil) })
	if defaultInjectorErr != nil {
		panic(defaultInjectorErr)
	}
	return defaultInjectorVal
}

// injectedBy is the pod option that injects the pod with in; injected is the
// same with the chart's default values. Given before annotations() in a
// pod's options, the init container's arguments carry the default settings
// and the annotations are checked on their own.
func injectedBy(in *injector) podOption {
	return func(p *corev1.Pod) {
		out, err := in.inject(p)
		if err != nil {
			panic(err)
		}
		*p = *out
	}
}

func injected(p *corev1.Pod) { injectedBy(defaultInjector())(p) }

// redirectContainer returns the pod's init container named meshinit-redirect.
func redirectContainer(p *corev1.Pod) *corev1.Container {
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == initContainerName {
			return &p.Spec.InitContainers[i]
		}
	}
	panic(fmt.Sprintf("pod %s has no init container %s", p.Name, initContainerName))
}

// forged changes the pod's meshinit-redirect init container (after injected).
func forged(change func(c *corev1.Container)) podOption {
	return func(p *corev1.Pod) { change(redirectContainer(p)) }
}

// withArg sets the value of argument --key of the pod's meshinit-redirect
// init container, as a pod that writes its own container could.
func withArg(key, value string) podOption {
	return forged(func(c *corev1.Container) {
		prefix := "--" + key + "="
		for i, a := range c.Args {
			if strings.HasPrefix(a, prefix) {
				c.Args[i] = prefix + value
				return
			}
		}
		panic("no argument " + prefix)
	})
}

// TestInjectorInjects: the webhook in-process injects a pod in an opted-in
// namespace with the chart's image and `apply` arguments.
func TestInjectorInjects(t *testing.T) {
	p := pod("p", injected)
	c := redirectContainer(p)
	if c.Image != defaultInjector().config.Image || len(c.Args) == 0 || c.Args[0] != "apply" {
		t.Fatalf("injected container %+v", c)
	}
}

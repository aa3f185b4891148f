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
	"fmt"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/meshinit/meshinit/redirect"
)

// NamespaceLabels returns the labels of the namespace called name.
type NamespaceLabels func(ctx context.Context, name string) (map[string]string, error)

// Handler is the mutating admission handler: it injects the redirect init
// container into the pods that opt in. Create it with [NewHandler].
type Handler struct {
	config     *Config
	namespaces NamespaceLabels
}

var _ admission.Handler = (*Handler)(nil)

// NewHandler returns a Handler for a validated config (see [ParseConfig])
// that reads namespace labels through namespaces.
func NewHandler(c Config, namespaces NamespaceLabels) *Handler {
	return &Handler{config: &c, namespaces: namespaces}
}

// Handle reviews one pod creation. Malformed requests are Errored(400);
// pods that cannot be injected as they ask are Denied with the reason;
// everything else is allowed, with a patch when the pod is injected.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	pod, err := decodePod(req)
	if errors.Is(err, errNotCreate) {
		return admission.Allowed("")
	}
	if err != nil {
		observe(start, OutcomeError, ReasonInvalidRequest)
		return admission.Errored(http.StatusBadRequest, err)
	}
	ns := req.Namespace
	if ns == "" {
		ns = pod.Namespace
	}
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		observe(start, OutcomeError, ReasonInvalidRequest)
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("invalid namespace %s: %s", redirect.QuoteShort(ns), msgs[0]))
	}
	// The request's logger (requestLogger) already names the namespace, the
	// user and the request; a pod created from generateName has no name yet.
	logger := log.FromContext(ctx).WithValues("pod", redirect.Short(podName(pod)))
	labels, err := h.namespaces(ctx, ns)
	if err != nil {
		observe(start, OutcomeError, ReasonNamespaceUnreadable)
		logger.Error(err, "reading the namespace's labels")
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("reading namespace %s: %w", ns, err))
	}

	r := Review(pod, ns, labels, h.config)
	observe(start, r.Outcome, metricReason(r))
	var resp admission.Response
	switch r.Outcome {
	case OutcomeDenied:
		logger.Info("pod denied", "reason", r.Reason, "message", r.Message)
		return admission.Denied(r.Message)
	case OutcomeInjected:
		logger.Info("pod injected", "reason", r.Reason, "config", r.Status.Config, "dryRun", req.DryRun != nil && *req.DryRun)
		resp = admission.Patched("", r.Patch...)
	default:
		logger.V(1).Info("pod not changed", "outcome", r.Outcome, "reason", r.Reason, "warnings", r.Warnings)
		resp = admission.Allowed("")
	}
	return resp.WithWarnings(r.Warnings...)
}

// errNotCreate marks a pod request for another operation than CREATE, the
// only one the webhook is registered for: such pods pass unchanged.
var errNotCreate = errors.New("not a CREATE")

// decodePod reads the pod of a request, refusing anything that is not a
// v1 Pod being created.
func decodePod(req admission.Request) (*corev1.Pod, error) {
	want := corev1.SchemeGroupVersion.WithKind("Pod")
	if got := req.Kind; got.Group != want.Group || got.Version != want.Version || got.Kind != want.Kind || req.SubResource != "" {
		return nil, fmt.Errorf("expected a %s (no subresource), got %s %s", want, redirect.QuoteShort(got.String()), redirect.QuoteShort(req.SubResource))
	}
	if req.Operation != admissionv1.Create {
		return nil, errNotCreate
	}
	if len(req.Object.Raw) == 0 {
		return nil, errors.New("request has no object")
	}
	pod, err := readPod(req.Object.Raw)
	if err != nil {
		return nil, fmt.Errorf("decoding the pod: %w", err)
	}
	if pod.Name == "" && pod.GenerateName == "" {
		return nil, errors.New("invalid pod: metadata.name and metadata.generateName are both empty")
	}
	if len(pod.Spec.Containers) == 0 {
		return nil, errors.New("invalid pod: spec.containers is empty")
	}
	return pod, nil
}

// requestLogger is admission.DefaultLogConstructor with the request's
// values cut short (see short): they are not validated yet when a pod is
// reviewed, and anything that reaches the webhook's port can send a review.
func requestLogger(base logr.Logger, req *admission.Request) logr.Logger {
	if req == nil {
		return base
	}
	return base.WithValues("namespace", redirect.Short(req.Namespace), "name", redirect.Short(req.Name),
		"resource", redirect.Short(req.Resource.String()), "user", redirect.Short(req.UserInfo.Username), "requestID", redirect.Short(string(req.UID)))
}

func podName(p *corev1.Pod) string {
	if p.Name != "" {
		return p.Name
	}
	return p.GenerateName + "*"
}

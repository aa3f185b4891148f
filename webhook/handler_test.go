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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func testHandler(t testing.TB, labels map[string]string) *Handler {
	t.Helper()
	c, err := ParseConfig([]byte(testConfig), "")
	if err != nil {
		t.Fatal(err)
	}
	return NewHandler(c, staticLabels(labels))
}

const plainPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"app","image":"nginx"}]}}`

// reviewBody wraps a request (as JSON) in an AdmissionReview.
func reviewBody(request string) string {
	return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":` + request + `}`
}

func podRequest(object string) string {
	return `{"uid":"u1","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
		`"namespace":"app","operation":"CREATE","object":` + object + `}`
}

// TestMalformedReviews posts bodies the API server would never send and
// checks each gets a clean AdmissionReview error, not a crash.
func TestMalformedReviews(t *testing.T) {
	hook := &admission.Webhook{Handler: testHandler(t, map[string]string{NamespaceLabel: "enabled"})}
	huge := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","annotations":{"x":"` + strings.Repeat("a", 8<<20) + `"}},"spec":{}}`
	for _, tc := range []struct {
		name, contentType, body string
		code                    int32
		message                 string
	}{
		{name: "empty body", body: "", code: 400, message: "expected a /v1, Kind=Pod"},
		{name: "bad JSON", body: `{"apiVersion":`, code: 400, message: "unexpected end of JSON input"},
		{name: "not JSON", body: "hello", code: 400, message: "json parse error"},
		{name: "wrong content type", contentType: "text/plain", body: reviewBody(podRequest(plainPod)), code: 400, message: "expected application/json"},
		{name: "wrong kind of review", body: `{"apiVersion":"v1","kind":"Pod"}`, code: 400, message: `got "/, Kind="`},
		{name: "no request", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, code: 400, message: "expected a /v1, Kind=Pod"},
		{name: "wrong kind of object", code: 400, message: `expected a /v1, Kind=Pod (no subresource), got "apps/v1, Kind=Deployment" ""`,
			body: reviewBody(`{"uid":"u1","kind":{"group":"apps","version":"v1","kind":"Deployment"},"operation":"CREATE","object":{}}`)},
		{name: "subresource", code: 400, message: `got "/v1, Kind=Pod" "ephemeralcontainers"`,
			body: reviewBody(`{"uid":"u1","kind":{"version":"v1","kind":"Pod"},"subResource":"ephemeralcontainers","operation":"CREATE","object":{}}`)},
		{name: "missing object", body: reviewBody(`{"uid":"u1","kind":{"version":"v1","kind":"Pod"},"operation":"CREATE"}`), code: 400, message: "request has no object"},
		{name: "object is not a pod", body: reviewBody(podRequest(`{"spec":{"containers":"no"}}`)), code: 400, message: "decoding the pod"},
		{name: "object is a string", body: reviewBody(podRequest(`"pod"`)), code: 400, message: "decoding the pod"},
		{name: "pod without name", body: reviewBody(podRequest(`{"metadata":{},"spec":{"containers":[{"name":"a"}]}}`)), code: 400, message: "metadata.name and metadata.generateName are both empty"},
		{name: "pod without containers", body: reviewBody(podRequest(`{"metadata":{"name":"a"},"spec":{}}`)), code: 400, message: "spec.containers is empty"},
		{name: "wrong case", body: reviewBody(podRequest(`{"Metadata":{"name":"a"},"SPEC":{"containers":[{"name":"a"}]}}`)), code: 400, message: "both empty"},
		{name: "huge object", body: reviewBody(podRequest(huge)), code: 413, message: "request entity is too large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.contentType == "" {
				tc.contentType = "application/json"
			}
			_, r, _ := serveReview(t, hook, tc.contentType, tc.body)
			if r.Allowed || r.Result == nil || r.Result.Code != tc.code || !strings.Contains(r.Result.Message, tc.message) {
				t.Errorf("response = allowed %v, result %+v; want code %d, message containing %q", r.Allowed, r.Result, tc.code, tc.message)
			}
			if len(r.Patch) > 0 {
				t.Errorf("error response carries a patch: %s", r.Patch)
			}
		})
	}
}

func TestHandleOverHTTP(t *testing.T) {
	hook := &admission.Webhook{Handler: testHandler(t, map[string]string{NamespaceLabel: "enabled"})}
	ar, r, raw := serveReview(t, hook, "application/json", reviewBody(podRequest(plainPod)))
	if ar.Kind != "AdmissionReview" || r.UID != "u1" || !r.Allowed || r.PatchType == nil || *r.PatchType != admissionv1.PatchTypeJSONPatch ||
		!bytes.Contains(r.Patch, []byte(`"name":"meshinit-redirect"`)) {
		t.Errorf("response = %s", raw)
	}
}

// serveReview posts body to hook as the API server does, with contentType, and
// returns the AdmissionReview it answered, its response and the raw
// answer; it fails the test if the answer is not an AdmissionReview with
// a response.
func serveReview(t testing.TB, hook *admission.Webhook, contentType, body string) (*admissionv1.AdmissionReview, *admissionv1.AdmissionResponse, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/inject", strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	hook.ServeHTTP(rec, req)
	var ar admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &ar); err != nil || ar.Response == nil {
		t.Fatalf("response is not an AdmissionReview (%v): %s", err, rec.Body.String())
	}
	return &ar, ar.Response, rec.Body.String()
}

func TestHandleNonCreateAndLookupErrors(t *testing.T) {
	h := testHandler(t, nil)
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Update,
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}}}
	if resp := h.Handle(context.Background(), req); !resp.Allowed || len(resp.Patches) > 0 {
		t.Errorf("UPDATE: %+v, want allowed unchanged", resp)
	}

	h.namespaces = func(context.Context, string) (map[string]string, error) { return nil, errors.New("cache not synced") }
	resp := review(t, h, "app", []byte(plainPod))
	if resp.Allowed || resp.Result.Code != http.StatusInternalServerError || !strings.Contains(resp.Result.Message, "reading namespace app: cache not synced") {
		t.Errorf("lookup error: %+v", resp.Result)
	}
}

// TestMessagesAndLogsQuoteShort: a review's values are not validated yet
// and may be megabytes long; denials, errors and logs quote at most their
// first 64 bytes.
func TestMessagesAndLogsQuoteShort(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name string
		req  admissionv1.AdmissionRequest
		code int32
	}{
		{name: "pod label", code: http.StatusForbidden, req: admissionv1.AdmissionRequest{
			Object: runtime.RawExtension{Raw: []byte(`{"metadata":{"name":"` + long + `","labels":{"meshinit.io/inject":"` + long + `"}},"spec":{"containers":[{"name":"a"}]}}`)}}},
		{name: "kind", code: http.StatusBadRequest, req: admissionv1.AdmissionRequest{Kind: metav1.GroupVersionKind{Version: "v1", Kind: long}}},
		{name: "subresource", code: http.StatusBadRequest, req: admissionv1.AdmissionRequest{SubResource: long}},
		{name: "namespace", code: http.StatusBadRequest, req: admissionv1.AdmissionRequest{Namespace: long}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				UID: types.UID(long), Name: long, Namespace: "app", Operation: admissionv1.Create,
				Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, UserInfo: authenticationv1.UserInfo{Username: long},
				Object: runtime.RawExtension{Raw: []byte(plainPod)},
			}}
			if tc.req.Kind.Kind != "" {
				req.Kind = tc.req.Kind
			}
			req.SubResource = tc.req.SubResource
			if tc.req.Namespace != "" {
				req.Namespace = tc.req.Namespace
			}
			if tc.req.Object.Raw != nil {
				req.Object = tc.req.Object
			}
			var logs []string
			base := funcr.New(func(prefix, args string) { logs = append(logs, args) }, funcr.Options{Verbosity: 1})
			ctx := log.IntoContext(context.Background(), requestLogger(base, &req))
			resp := testHandler(t, map[string]string{NamespaceLabel: "enabled"}).Handle(ctx, req)
			if resp.Allowed || resp.Result.Code != tc.code || !strings.Contains(resp.Result.Message, `xxxx"...`) || len(resp.Result.Message) > 300 {
				t.Errorf("response %d %.400q, want %d quoting 64 bytes of the value", resp.Result.Code, resp.Result.Message, tc.code)
			}
			for _, line := range logs {
				if len(line) > 1000 {
					t.Errorf("log line of %d bytes: %.400s", len(line), line)
				}
			}
		})
	}
}

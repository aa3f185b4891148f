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
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/meshinit/meshinit/api/v1alpha1"
)

const (
	imageA = "ghcr.io/meshinit/redirector:v1.0.0"
	imageB = "ghcr.io/meshinit/redirector:v1.1.0"
	imageC = "ghcr.io/meshinit/redirector:v1.2.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

// TestTrustSpec: each case moves the spec to an image; every case is also
// run twice, the second run changing nothing.
func TestTrustSpec(t *testing.T) {
	type spec = v1alpha1.RedirectorTrustSpec
	for _, tc := range []struct {
		name    string
		old     spec
		image   string
		want    spec
		changed bool
	}{
		{"empty spec", spec{}, imageA, spec{Current: imageA}, true},
		{"no current, previous kept", spec{Previous: imageC}, imageA, spec{Current: imageA, Previous: imageC}, true},
		{"no current, previous the image", spec{Previous: imageA}, imageA, spec{Current: imageA, Previous: imageA}, true},
		{"same image", spec{Current: imageA}, imageA, spec{Current: imageA}, false},
		{"same image, previous kept", spec{Current: imageA, Previous: imageC}, imageA, spec{Current: imageA, Previous: imageC}, false},
		{"upgrade", spec{Current: imageA}, imageB, spec{Current: imageB, Previous: imageA}, true},
		{"upgrade over a previous", spec{Current: imageA, Previous: imageC}, imageB, spec{Current: imageB, Previous: imageA}, true},
		{"rollback to previous", spec{Current: imageB, Previous: imageA}, imageA, spec{Current: imageA, Previous: imageB}, true},
		{"same repository, other digest", spec{Current: imageC}, imageC[:len(imageC)-1] + "0", spec{Current: imageC[:len(imageC)-1] + "0", Previous: imageC}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := trustSpec(tc.old, tc.image)
			if got != tc.want || changed != tc.changed {
				t.Errorf("trustSpec(%+v, %q) = %+v, %v; want %+v, %v", tc.old, tc.image, got, changed, tc.want, tc.changed)
			}
			if again, changed := trustSpec(got, tc.image); again != got || changed {
				t.Errorf("run again: %+v, %v; want %+v unchanged", again, changed, got)
			}
		})
	}
}

// TestTrustSpecSequence: a release's life, each step from the previous
// step's spec: install at A (the chart renders current), a hook at A,
// upgrade to B, a retried hook, rollback to A, upgrade to C.
func TestTrustSpecSequence(t *testing.T) {
	s := v1alpha1.RedirectorTrustSpec{Current: imageA}
	for _, step := range []struct {
		image             string
		current, previous string
		changed           bool
	}{
		{imageA, imageA, "", false},
		{imageB, imageB, imageA, true},
		{imageB, imageB, imageA, false},
		{imageA, imageA, imageB, true},
		{imageC, imageC, imageA, true},
	} {
		var changed bool
		s, changed = trustSpec(s, step.image)
		if s.Current != step.current || s.Previous != step.previous || changed != step.changed {
			t.Fatalf("to %s: %+v, changed %v; want current %q, previous %q, changed %v", step.image, s, changed, step.current, step.previous, step.changed)
		}
	}
}

// TestTrustFlags: invalid arguments exit 2 before any API client is made,
// with an error naming the flag and its value.
func TestTrustFlags(t *testing.T) {
	const ns, nm, image = "--namespace=meshinit-system", "--name=meshinit-redirector-trust", "--image=" + imageA
	valid := []string{ns, nm, image}
	a := func(args ...string) []string { return args }
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"--help"}, 0, []string{"-name", "RedirectorTrust", "-image", "-namespace"}},
		{nil, 2, []string{"--namespace: required", "--name: required", "--image: required"}},
		{[]string{"--namespace=meshinit-system", "--name=meshinit-redirector-trust"}, 2, []string{"--image: required"}},
		{a(ns, nm, "--image="), 2, []string{"--image: required"}},
		{a(nm, image, "--namespace="), 2, []string{"--namespace: required"}},
		{a(ns, image, "--name", ""), 2, []string{"--name: required"}},
		{a(ns, nm, "--image=Redirector:v1"), 2, []string{`--image="Redirector:v1": not an image reference`}},
		{a(ns, nm, "--image=https://ghcr.io/meshinit/redirector:v1"), 2, []string{`--image="https://ghcr.io/meshinit/redirector:v1": not an image reference`}},
		{a(ns, nm, "--image=ghcr.io/meshinit/redirector:"), 2, []string{`--image="ghcr.io/meshinit/redirector:"`}},
		{a(ns, nm, "--image= ghcr.io/meshinit/redirector:v1"), 2, []string{`--image=" ghcr.io/meshinit/redirector:v1"`}},
		{a(nm, image, "--namespace=Meshinit"), 2, []string{`--namespace="Meshinit"`}},
		{a(ns, image, "--name=trust/x"), 2, []string{`--name="trust/x": a lowercase RFC 1123 subdomain`}},
		{a(ns, image, "--name=Trust"), 2, []string{`--name="Trust": a lowercase RFC 1123 subdomain`}},
		{a(ns, image, "--name="+strings.Repeat("t", 254)), 2, []string{`--name="` + strings.Repeat("t", 254) + `": must be no more than 253 characters`}},
		{a(ns, image, "--configmap=meshinit-redirector-trust"), 2, []string{"flag provided but not defined: -configmap"}},
		{a(ns, nm, image, "extra"), 2, []string{`unexpected argument "extra"`}},
		{a(ns, nm, image, "--port=8443"), 2, []string{"flag provided but not defined: -port"}},
	} {
		var out bytes.Buffer
		called := false
		newClient := func() (client.Client, error) { called = true; return nil, errors.New("no client in this test") }
		code := trustMain(context.Background(), tc.args, &out, &out, newClient)
		if code != tc.code || called {
			t.Errorf("trust-redirector %q = %d (client made: %v), want %d without a client\n%s", tc.args, code, called, tc.code, out.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("trust-redirector %q: output lacks %q:\n%s", tc.args, w, out.String())
			}
		}
	}
	// Through Main: the subcommand is its first argument.
	var out bytes.Buffer
	if code := Main(context.Background(), []string{TrustCommand, "--namespace=ns", "--name=trust"}, &out, &out); code != 2 || !strings.Contains(out.String(), "--image: required") {
		t.Errorf("Main(trust-redirector without --image) = %d, %q; want 2, --image: required", code, out.String())
	}
	// Valid flags reach the client, whose error exits 1.
	out.Reset()
	noCluster := func() (client.Client, error) { return nil, errors.New("no cluster here") }
	if code := trustMain(context.Background(), valid, &out, &out, noCluster); code != 1 || !strings.Contains(out.String(), "no cluster here") {
		t.Errorf("trust-redirector with valid flags and no API client = %d, %q; want 1", code, out.String())
	}
}

// TestTrustImageReference: checkImage (the distribution project's parser,
// as the kubelet's) accepts only references that go-containerregistry
// (which the tests may link) parses too, and rejects what the kubelet
// would not pull.
func TestTrustImageReference(t *testing.T) {
	const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		ref   string
		valid bool
	}{
		{"redirector", true},
		{"redirector:v1", true},
		{"meshinit/redirector:v1.0.0-rc.1_x", true},
		{"ghcr.io/meshinit/redirector:v1", true},
		{"ghcr.io/meshinit/sub/redirector", true},
		{"localhost:5000/redirector:v1", true},
		{"localhost/redirector", true},
		{"registry.example.com:443/a-b/c__d/e.f", true},
		{"Registry.Example.com/redirector", true},
		{"[::1]:5000/redirector:v1", true},
		{"127.0.0.1:5000/redirector", true},
		{"ghcr.io/meshinit/redirector@sha256:" + hex64, true},
		{"ghcr.io/meshinit/redirector:v1@sha256:" + hex64, true},
		{"redirector@sha512:" + hex64 + hex64, true},
		{"redirector:" + strings.Repeat("t", 128), true},
		{"", false},
		{" redirector", false},
		{"redirector ", false},
		{"Redirector", false},
		{"ghcr.io/Meshinit/redirector", false},
		{"redirector:", false},
		{"redirector:v1:v2", false},
		{"redirector:-v1", false},
		{"redirector:" + strings.Repeat("t", 129), false},
		{"redirector@", false},
		{"redirector@sha256:" + hex64[:63], false},
		{"redirector@sha256:" + strings.ToUpper(hex64), false},
		{"redirector@md5:" + hex64[:32], false},
		{"https://ghcr.io/redirector", false},
		{"ghcr.io//redirector", false},
		{"/redirector", false},
		{"redirector/", false},
		{"-redirector", false},
		{"red..irector", false},
		{"ghcr.io:port/redirector", false},
		{"ghcr.io/" + strings.Repeat("r", 248), false}, // 256 characters
		{"ghcr.io/" + strings.Repeat("r", 247), true},
	} {
		msgs := checkImage(tc.ref)
		if valid := len(msgs) == 0; valid != tc.valid {
			t.Errorf("checkImage(%q) = %q, want valid %v", tc.ref, msgs, tc.valid)
		}
		if _, err := name.ParseReference(tc.ref); len(msgs) == 0 && err != nil {
			t.Errorf("checkImage accepts %q, which go-containerregistry does not parse: %v", tc.ref, err)
		}
	}
}

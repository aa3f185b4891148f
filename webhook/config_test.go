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
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/meshinit/meshinit/initimage"
	"github.com/meshinit/meshinit/redirect"
)

func TestParseConfigDefaults(t *testing.T) {
	c, err := ParseConfig([]byte("image: redirector:1\n"), "meshinit-system")
	if err != nil {
		t.Fatal(err)
	}
	if c.ImagePullPolicy != corev1.PullIfNotPresent || c.Placement != PlaceFirst || c.PodSecurity != PodSecurityWarn ||
		c.Namespace != "meshinit-system" || c.Privileged || c.LogFormat != LogFormatText {
		t.Errorf("defaults = %+v", c)
	}
	// The default log format is the redirector's, which is why the
	// container's arguments leave it out.
	if LogFormatText != initimage.DefaultLogFormat {
		t.Errorf("logFormat's default %q is not the redirector's %q", LogFormatText, initimage.DefaultLogFormat)
	}
	if got, want := c.redirect.Fingerprint(), redirect.Defaults().Fingerprint(); got != want {
		t.Errorf("redirect defaults: fingerprint %s, want the redirector's %s", got, want)
	}
}

// TestParseConfigResourceDefaults: the init container's resources as the
// API server defaults a pod's (requests from limits, milli units rounded
// up), so the container read back compares equal.
func TestParseConfigResourceDefaults(t *testing.T) {
	c, err := ParseConfig([]byte("image: r:1\nresources: {limits: {cpu: '0.0001', memory: 64Mi}, requests: {memory: 16Mi}}\n"), "meshinit-system")
	if err != nil {
		t.Fatal(err)
	}
	want := corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{"cpu": resource.MustParse("1m"), "memory": resource.MustParse("64Mi")},
		Requests: corev1.ResourceList{"cpu": resource.MustParse("1m"), "memory": resource.MustParse("16Mi")},
	}
	if !equality.Semantic.DeepEqual(c.Resources, want) {
		t.Errorf("resources %v, want %v", c.Resources, want)
	}
}

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		err        []string // each must appear; none means valid
	}{
		{name: "full", yaml: `
image: r:1
imagePullPolicy: Never
privileged: true
placement: last
podSecurity: deny
namespace: mesh
resources: {requests: {cpu: 10m}, limits: {cpu: 100m}}
redirect: {inbound-proxy-port: "16006", exclude-outbound-ports: "22,53", ipv6: "off"}
`},
		{name: "namespace from the file wins", yaml: "image: r:1\nnamespace: other\n"},
		{name: "no image", yaml: "placement: first\n", err: []string{"image: required"}},
		{name: "unknown field", yaml: "image: r:1\nplacment: last\n", err: []string{`unknown field "placment"`}},
		{name: "bad enums", yaml: "image: r:1\nplacement: middle\npodSecurity: ignore\nimagePullPolicy: Sometimes\nlogFormat: JSON\n",
			err: []string{`placement "middle": must be first or last`, `podSecurity "ignore": must be warn or deny`, `imagePullPolicy "Sometimes"`, `logFormat "JSON": must be text or json`}},
		{name: "bad namespace", yaml: "image: r:1\nnamespace: Mesh_System\n", err: []string{`namespace "Mesh_System"`}},
		{name: "requests above limits", yaml: "image: r:1\nresources: {requests: {memory: 1Gi}, limits: {memory: 64Mi}}\n",
			err: []string{"resources.requests.memory 1Gi: above its limit 64Mi"}},
		{name: "bad redirect value", yaml: "image: r:1\nredirect: {inbound-proxy-port: \"0\"}\n",
			err: []string{`redirect: invalid inbound-proxy-port "0": must be a TCP port`}},
		{name: "redirect conflict", yaml: "image: r:1\nredirect: {inbound-proxy-port: \"15001\"}\n",
			err: []string{"must differ from the outbound proxy port"}},
		{name: "unknown redirect setting", yaml: "image: r:1\nredirect: {proxy-port: \"1\"}\n",
			err: []string{`redirect: unknown setting "proxy-port"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.yaml), "meshinit-system")
			if len(tc.err) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.err)
			}
			for _, want := range tc.err {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

// TestStatusNamesTheConfigFile: the status annotation names the
// configuration by the hash of the file's bytes, so a change to any byte of
// it (here the pull policy) changes the status, and the pod's own settings
// (in the init container's arguments) do not.
func TestStatusNamesTheConfigFile(t *testing.T) {
	file := "image: ghcr.io/meshinit/redirector:test\nnamespace: meshinit-system\n"
	c, err := ParseConfig([]byte(file), "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Status().String(), `{"initContainers":["meshinit-redirect"],"config":"`+ConfigHash([]byte(file))+`"}`; got != want {
		t.Errorf("status %s, want %s", got, want)
	}
	if h := ConfigHash([]byte(file)); len(h) != 16 || h != fmt.Sprintf("%x", sha256.Sum256([]byte(file)))[:16] {
		t.Errorf("ConfigHash %q, want the first 16 hex digits of the file's SHA-256", h)
	}
	other, err := ParseConfig([]byte(file+"imagePullPolicy: IfNotPresent\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if other.Status().Config == c.Status().Config {
		t.Error("a changed file (the same settings) gives the same status")
	}
}

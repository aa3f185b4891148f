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
	"errors"
	"fmt"
	"os"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/redirect"
)

// Placement says where the init container goes among a pod's existing init
// containers. Init containers run one after another, in order, so the
// placement decides whose traffic the redirect rules already apply to.
type Placement string

const (
	// PlaceFirst runs the redirect before every other init container (the
	// default): all of the pod's traffic is redirected from its first
	// packet, including the traffic of the other init containers. An init
	// container that needs the network before the proxy listens must run as
	// the proxy UID, or the proxy must run as a native sidecar (an init
	// container with restartPolicy Always) listed before it; a native
	// sidecar proxy placed anywhere after the redirect starts with the rules
	// already in place and is exempt from them by its UID.
	PlaceFirst Placement = "first"
	// PlaceLast runs the redirect after every existing init container: they
	// (and native sidecars, which keep running) reach the network directly,
	// as if meshinit were not there; only connections opened after the
	// redirect ran (by later init containers and the app) are redirected.
	PlaceLast Placement = "last"
)

// PodSecurityAction says what to do with a pod that would be injected in a
// namespace whose enforced PodSecurity level (baseline or restricted)
// rejects the init container's capabilities.
type PodSecurityAction string

const (
	// PodSecurityWarn admits the pod without the init container and returns
	// an admission warning that says why (the default): the pod runs, its
	// traffic is not redirected.
	PodSecurityWarn PodSecurityAction = "warn"
	// PodSecurityDeny refuses the pod with a message that says why.
	PodSecurityDeny PodSecurityAction = "deny"
)

// The redirector's log formats (its --log-format; Config.LogFormat).
// LogFormatText is its default (initimage.DefaultLogFormat).
const (
	LogFormatText = "text"
	LogFormatJSON = "json"
)

// Config is the webhook's injection configuration, read from a YAML file
// (mounted from a ConfigMap). The zero value of each field means its default;
// [Config.SetDefaults] fills them in, [Config.Validate] checks the result.
type Config struct {
	// Image of the injected init container, whose entrypoint is the
	// redirector. Required.
	Image string `json:"image"`
	// ImagePullPolicy of the init container. Default: IfNotPresent.
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// Resources of the init container. Default: none. As the API server
	// does for a pod's containers, a request defaults to the limit and every
	// quantity is rounded up to milli units.
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// Privileged runs the init container privileged, for nodes whose
	// iptables needs more than NET_ADMIN and NET_RAW. Default: false.
	Privileged bool `json:"privileged,omitempty"`
	// Placement among existing init containers. Default: first.
	Placement Placement `json:"placement,omitempty"`
	// PodSecurity is what to do in namespaces that enforce PodSecurity
	// baseline or restricted. Default: warn.
	PodSecurity PodSecurityAction `json:"podSecurity,omitempty"`
	// LogFormat is the redirector's --log-format: text or json. Default:
	// text, the redirector's own default, which the container's arguments
	// then leave out; json adds --log-format=json after the settings.
	LogFormat string `json:"logFormat,omitempty"`
	// Namespace is meshinit's own namespace, never injected. Default: the
	// server's --namespace.
	Namespace string `json:"namespace,omitempty"`
	// Redirect holds the cluster-wide redirect settings under the
	// redirector's flag names without dashes ("inbound-proxy-port": "15006").
	// Pod annotations override the settings they name. Default: the
	// redirector's defaults.
	Redirect map[string]string `json:"redirect,omitempty"`
	// Mesh names the chart's mesh preset (values: mesh), for people and
	// logs; "" without one. The preset's settings are in Redirect already.
	Mesh string `json:"mesh,omitempty"`
	// MeshAnnotations are the mesh's own pod annotations the preset reads
	// (redirect.FromPodAnnotations). Default: none.
	MeshAnnotations []redirect.MeshAnnotation `json:"meshAnnotations,omitempty"`

	// redirect is Redirect read by Validate (redirect.FromSettings).
	redirect redirect.Config
	// hash is ConfigHash of the bytes ParseConfig read, for Status.
	hash string
}

// LoadConfig reads a YAML configuration file, fills in defaults and
// validates it. Unknown fields are errors, so typos do not go unnoticed.
func LoadConfig(path, namespace string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("reading config: %w", err)
	}
	c, err := ParseConfig(data, namespace)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes YAML configuration, fills in defaults (namespace is the
// default Namespace) and validates it. The status annotation of the pods it
// injects names data by its hash (ConfigHash).
func ParseConfig(data []byte, namespace string) (Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return Config{}, fmt.Errorf("decoding: %w", err)
	}
	c.hash = ConfigHash(data)
	if c.Namespace == "" {
		c.Namespace = namespace
	}
	c.SetDefaults()
	return c, c.Validate()
}

// SetDefaults fills in the default of every unset field.
func (c *Config) SetDefaults() {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
	}
	if c.Placement == "" {
		c.Placement = PlaceFirst
	}
	if c.PodSecurity == "" {
		c.PodSecurity = PodSecurityWarn
	}
	if c.LogFormat == "" {
		c.LogFormat = LogFormatText
	}
	for name, q := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok {
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			c.Resources.Requests[name] = q.DeepCopy()
		}
	}
	for _, l := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		for name, q := range l {
			q.RoundUp(-3)
			l[name] = q
		}
	}
}

// Validate checks every field and parses Redirect. Each error names the
// field and its value; all are joined.
func (c *Config) Validate() error {
	var errs []error
	if c.Image == "" {
		errs = append(errs, errors.New("image: required"))
	}
	switch c.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		errs = append(errs, fmt.Errorf("imagePullPolicy %q: must be Always, IfNotPresent or Never", c.ImagePullPolicy))
	}
	switch c.Placement {
	case PlaceFirst, PlaceLast:
	default:
		errs = append(errs, fmt.Errorf("placement %q: must be first or last", c.Placement))
	}
	switch c.PodSecurity {
	case PodSecurityWarn, PodSecurityDeny:
	default:
		errs = append(errs, fmt.Errorf("podSecurity %q: must be warn or deny", c.PodSecurity))
	}
	switch c.LogFormat {
	case LogFormatText, LogFormatJSON:
	default:
		errs = append(errs, fmt.Errorf("logFormat %q: must be text or json", c.LogFormat))
	}
	if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("namespace %q: %s", c.Namespace, msgs[0]))
	}
	for name, q := range c.Resources.Requests {
		if lim, ok := c.Resources.Limits[name]; ok && q.Cmp(lim) > 0 {
			errs = append(errs, fmt.Errorf("resources.requests.%s %s: above its limit %s", name, q.String(), lim.String()))
		}
	}
	if err := redirect.ValidateMeshAnnotations(c.MeshAnnotations); err != nil {
		errs = append(errs, fmt.Errorf("meshAnnotations: %w", err))
	}
	rc, err := redirect.FromSettings(c.Redirect, redirect.Defaults())
	if err != nil {
		errs = append(errs, fmt.Errorf("redirect: %w", err))
	}
	c.redirect = rc
	return errors.Join(errs...)
}

// excluded reports whether pods in namespace ns are never injected:
// kube-system and meshinit's own namespace.
func (c *Config) excluded(ns string) bool {
	return slices.Contains([]string{metav1.NamespaceSystem, c.Namespace}, ns)
}

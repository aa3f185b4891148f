package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	"github.com/meshinit/meshinit/redirect"
)

// StatusAnnotation records on each injected pod what was injected, for
// people and tooling. The webhook never trusts it (a pod can carry a copy):
// whether a pod keeps its init container depends on the container alone.
const StatusAnnotation = "meshinit.io/status"

// Status is the value of StatusAnnotation, as JSON.
type Status struct {
	// InitContainers are the names of the injected init containers.
	InitContainers []string `json:"initContainers"`
	// Redirect is the redirect config's fingerprint, which the redirector
	// also logs when it applies the rules.
	Redirect string `json:"redirect"`
	// Hash covers the whole injected container (image, resources, security
	// context, the redirect settings): the effective configuration.
	Hash string `json:"hash"`
}

// newStatus describes injecting container, built by c from rc.
func newStatus(c *Config, container corev1.Container, rc redirect.Config) Status {
	fingerprint := rc.Fingerprint()
	sum := sha256.Sum256(append(c.template[:len(c.template):len(c.template)], fingerprint...))
	return Status{
		InitContainers: []string{container.Name},
		Redirect:       fingerprint,
		Hash:           hex.EncodeToString(sum[:8]),
	}
}

// containerTemplate is the injected container without its arguments, as
// JSON: what the status hash covers besides the redirect settings.
func containerTemplate(c *Config) []byte {
	container := initContainer(c, redirect.Config{})
	container.Args = nil
	spec, err := json.Marshal(container)
	if err != nil {
		// A corev1.Container always marshals; failing here is a bug.
		panic("webhook: marshalling the init container: " + err.Error())
	}
	return spec
}

// String renders s as the annotation's value.
func (s Status) String() string {
	b, _ := json.Marshal(s) // strings only: cannot fail
	return string(b)
}

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
	"encoding/hex"
	"encoding/json"
)

// StatusAnnotation records on each injected pod what was injected, for
// people and tooling. The webhook never trusts it (a pod can carry a copy):
// whether a pod keeps its init container depends on the container alone.
const StatusAnnotation = "meshinit.io/status"

// Status is the value of StatusAnnotation, as JSON. Both injectors write
// the same one: the webhook from the configuration file it loaded, the
// MutatingAdmissionPolicy from the same file's bytes hashed by Helm.
type Status struct {
	// InitContainers are the names of the injected init containers.
	InitContainers []string `json:"initContainers"`
	// Config identifies the injection configuration (the chart's
	// inject values, as the webhook's configuration file holds
	// them): the first 16 hex digits of the SHA-256 of the file's bytes
	// (ConfigHash). The pod's own settings are not hashed: the init
	// container's arguments state them.
	Config string `json:"config"`
}

// Status is the status annotation of a pod c injects (with either
// injector: the chart's MutatingAdmissionPolicy writes the same).
func (c *Config) Status() Status {
	return Status{InitContainers: []string{ContainerName}, Config: c.hash}
}

// ConfigHash is what Status.Config holds for a configuration file of these
// bytes: the first 16 hex digits of their SHA-256, as the chart computes it
// (sha256sum | trunc 16) from the ConfigMap it renders.
func ConfigHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// String renders s as the annotation's value.
func (s Status) String() string {
	b, _ := json.Marshal(s) // strings only: cannot fail
	return string(b)
}

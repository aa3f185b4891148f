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
	"fmt"
	"strings"
)

// EnforceLabel is the Pod Security Admission label that sets the level a
// namespace enforces.
const EnforceLabel = "pod-security.kubernetes.io/enforce"

// podSecurityConflict explains why a namespace's enforced PodSecurity level
// rejects the init container, or returns "" when it does not. baseline and
// restricted both forbid adding NET_ADMIN and NET_RAW (and privileged);
// restricted also forbids running as root. Levels set cluster-wide in the
// API server's admission configuration are not visible here.
func podSecurityConflict(namespace string, namespaceLabels map[string]string, c *Config) string {
	level := namespaceLabels[EnforceLabel]
	if level != "baseline" && level != "restricted" {
		return ""
	}
	what := "capabilities " + strings.Join(capabilityNames(), " and ")
	if c.Privileged {
		what = "privileged mode"
	}
	return fmt.Sprintf("namespace %s enforces PodSecurity %q (label %s), which forbids the %s that the %s init container needs "+
		"to redirect traffic; label the namespace %s=privileged to inject, or opt the pod out with label %s=false",
		namespace, level, EnforceLabel, what, ContainerName, EnforceLabel, PodLabel)
}

func capabilityNames() []string {
	names := make([]string, len(capabilities))
	for i, c := range capabilities {
		names[i] = string(c)
	}
	return names
}

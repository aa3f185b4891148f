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

{{- /*
CEL snippets of the PodSecurity guard (podsecurity-validatingadmissionpolicy.yaml,
docs/podsecurity.md). This file renders to nothing.
*/ -}}

{{- /* meshinit.podSecurity.name: the guard's policy and pod binding; the template binding adds -templates. */ -}}
{{- define "meshinit.podSecurity.name" -}}
{{ include "meshinit.fullname" . }}-pod-security
{{- end -}}

{{- /* meshinit.podSecurity.label: the namespace label that opts a namespace in, with the level as its value. */ -}}
{{- define "meshinit.podSecurity.label" -}}
meshinit.io/pod-security
{{- end -}}

{{- /* meshinit.podSecurity.namespaceSelector: the namespaces the guard checks (and the trust policy with it). */ -}}
{{- define "meshinit.podSecurity.namespaceSelector" -}}
matchExpressions:
  - key: {{ include "meshinit.podSecurity.label" . }}
    operator: Exists
{{- end -}}

{{- /*
meshinit.podSecurity.names: a CEL list of container names (strings) as
upstream words them: container "a" or containers "a", "b".
*/ -}}
{{- define "meshinit.podSecurity.names" -}}
({{ . }}.size() == 1 ? 'container ' : 'containers ') + {{ include "meshinit.podSecurity.quoteAll" . }}
{{- end -}}

{{- /* meshinit.podSecurity.quoteAll: a CEL list of strings, each quoted (cut after 64 characters), joined by ", ". */ -}}
{{- define "meshinit.podSecurity.quoteAll" -}}
({{ . }}).map(s, {{ include "meshinit.policy.quoted" "s" }}).join(', ')
{{- end -}}

{{- /*
meshinit.podSecurity.setters: who sets a forbidden value, as upstream words
it: "pod", containers "a", "b", or both joined by " and ". Argument: (dict
"pod" <CEL bool: the pod's securityContext does> "containers" <CEL list of
container names>).
*/ -}}
{{- define "meshinit.podSecurity.setters" -}}
(({{ .pod }} ? ['pod'] : []) + ({{ .containers }}.size() > 0 ? [{{ include "meshinit.podSecurity.names" .containers }}] : [])).join(' and ')
{{- end -}}

{{- /*
meshinit.podSecurity.hosts: the host fields of a container's probes and
lifecycle handlers (CEL variable c), as a CEL list of strings ('' where
unset): what upstream's hostProbesAndHostLifecycle check reads.
*/ -}}
{{- define "meshinit.podSecurity.hosts" -}}
{{- $out := list -}}
{{- range list "livenessProbe" "readinessProbe" "startupProbe" "lifecycle.?postStart" "lifecycle.?preStop" -}}
{{- $h := . -}}
{{- range list "httpGet" "tcpSocket" -}}
{{- $out = append $out (printf "c.?%s.?%s.?host.orValue('')" $h .) -}}
{{- end -}}
{{- end -}}
[{{ join ", " $out }}]
{{- end -}}

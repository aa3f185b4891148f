{{- /*
The redirector images meshinit's policies trust (trust-redirector.yaml) and
the hook that carries the running one over an upgrade or a rollback
(trust-hook.yaml).
*/ -}}

{{- /* meshinit.trust.name: the RedirectorTrust, the policy, its bindings and the hook's objects. */ -}}
{{- define "meshinit.trust.name" -}}
{{ include "meshinit.fullname" . }}-redirector-trust
{{- end -}}

{{- /*
meshinit.trust.enabled: "true" when a policy recognises meshinit's init
container (the RedirectPolicy's policy or the PodSecurity guard), which
then needs its image checked; "" otherwise.
*/ -}}
{{- define "meshinit.trust.enabled" -}}
{{- if or .Values.policy.enabled .Values.podSecurityGuard.enabled }}true{{ end -}}
{{- end -}}

{{- /*
meshinit.trust.redirectImages: a CEL list of the images of a pod's (or
template's) init containers named meshinit-redirect, given the CEL variable
holding the object ("object" or "oldObject").
*/ -}}
{{- define "meshinit.trust.redirectImages" -}}
{{ include "meshinit.policy.podOf" . }}.spec.?initContainers.orValue([]).filter(c, c.name == 'meshinit-redirect').map(c, c.?image.orValue(''))
{{- end -}}

{{- /* meshinit.trust.hook: the annotations of the hook's objects, given (dict "weight" <n>). */ -}}
{{- define "meshinit.trust.hook" -}}
helm.sh/hook: pre-upgrade,pre-rollback
helm.sh/hook-weight: {{ .weight | quote }}
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end -}}

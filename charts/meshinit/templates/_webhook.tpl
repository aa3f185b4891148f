{{/*
The mutating admission webhook (Go: package webhook; values: webhook).
The certificate parts come from _certs.tpl.
*/}}

{{- define "meshinit.webhook.name" -}}
{{ include "meshinit.fullname" . }}-webhook
{{- end -}}

{{/* Labels that select the webhook's pods. */}}
{{- define "meshinit.webhook.selectorLabels" -}}
app.kubernetes.io/name: meshinit
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: webhook
{{- end -}}

{{/* The URL path the webhook serves and the API server calls. */}}
{{- define "meshinit.webhook.path" -}}
/inject
{{- end -}}

{{/* The webhook's config file (webhook.Config). */}}
{{- define "meshinit.webhook.config" -}}
{{- with .Values.inject -}}
image: {{ include "meshinit.redirect.image" $ | quote }}
imagePullPolicy: {{ .imagePullPolicy }}
privileged: {{ .privileged }}
placement: {{ include "meshinit.placement" $ }}
podSecurity: {{ .podSecurity }}
logFormat: {{ .logFormat }}
resources: {{ .resources | toJson }}
redirect:
{{- range include "meshinit.redirect.settings" $ | fromJsonArray }}
  {{ index . 0 }}: {{ index . 1 | quote }}
{{- end }}
{{- with $.Values.mesh }}
mesh: {{ . }}
meshAnnotations: {{ include "meshinit.mesh.annotations" $ }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
A namespaceSelector term that leaves out kube-system and the release
namespace, which the webhook never injects.
*/}}
{{- define "meshinit.webhook.notExcluded" -}}
- key: kubernetes.io/metadata.name
  operator: NotIn
  values: [kube-system, {{ .Release.Namespace | quote }}]
{{- end -}}

{{/*
webhook.clientAuth.enabled: the volume of the client CA bundle (a ConfigMap
or a Secret, exactly one), mounted at /etc/meshinit/client-ca; "" when off.
*/}}
{{- define "meshinit.webhook.clientCAVolume" -}}
{{- with .Values.webhook.clientAuth }}
{{- if .enabled }}
{{- if eq (empty .caBundle.configMap) (empty .caBundle.secret) }}
{{- fail "webhook.clientAuth.enabled needs exactly one of webhook.clientAuth.caBundle.configMap and webhook.clientAuth.caBundle.secret: where the CA certificates of the API server's client certificate are" }}
{{- end }}
{{- if not .allowedNames }}
{{- fail "webhook.clientAuth.enabled needs webhook.clientAuth.allowedNames: the common names or DNS names of the API server's client certificate (its CA signs others too)" }}
{{- end }}
- name: client-ca
{{- if .caBundle.configMap }}
  configMap:
    name: {{ .caBundle.configMap }}
{{- else }}
  secret:
    secretName: {{ .caBundle.secret }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{- /*
The securityContexts of the pods that run the webhook image (the webhook's
Deployment, the trust hook's Job): its nonroot user, no privilege, what the
restricted PodSecurity level asks.
*/ -}}
{{- define "meshinit.webhook.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
seccompProfile: {type: RuntimeDefault}
{{- end -}}
{{- define "meshinit.webhook.containerSecurityContext" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: [ALL]}
seccompProfile: {type: RuntimeDefault}
{{- end -}}

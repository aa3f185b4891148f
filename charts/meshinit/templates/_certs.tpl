{{/*
The webhook's serving certificate (Go: package certs; values: certs and
certManager).

For the webhook's templates (Deployment, Service, MutatingWebhookConfiguration,
ServiceAccount), which include these named templates:
  meshinit.certs.serviceName         the webhook Service: <fullname>-webhook
  meshinit.certs.serviceAccountName  the webhook's ServiceAccount, which the
                                     certs-rbac.yaml bindings grant to
  meshinit.certs.webhookConfigName   the MutatingWebhookConfiguration: <fullname>
  meshinit.certs.annotations         the MutatingWebhookConfiguration's
                                     metadata.annotations (inject-ca-from with
                                     certManager.enabled; empty otherwise):
      {{- with include "meshinit.certs.annotations" . }}
      annotations:
        {{- . | nindent 4 }}
      {{- end }}
  meshinit.certs.args                the certificate flags of the webhook
                                     container, a YAML list (certs.BindFlags)
  meshinit.certs.volumes             pod volumes for the cert dir
  meshinit.certs.volumeMounts        the container's mount of the cert dir
Leave the caBundle out of the MutatingWebhookConfiguration: self-managed mode
patches it in (and re-asserts it), cert-manager's cainjector injects it.
*/}}

{{- define "meshinit.certs.serviceName" -}}
{{ include "meshinit.fullname" . }}-webhook
{{- end -}}

{{- define "meshinit.certs.serviceAccountName" -}}
{{ include "meshinit.fullname" . }}-webhook
{{- end -}}

{{- define "meshinit.certs.webhookConfigName" -}}
{{ include "meshinit.fullname" . }}
{{- end -}}

{{- define "meshinit.certs.secretName" -}}
{{ .Values.certs.secretName | default (printf "%s-webhook-tls" (include "meshinit.fullname" .)) }}
{{- end -}}

{{/*
Self-managed mode's two Secrets, which certs-secrets.yaml creates empty:
the serving certificate (with a copy of the CA certificates) and the CA
(its key). The webhook reads and updates them by name, and creates none.
certs.secretName then names the one Secret of releases from before, whose
certificates the webhook moves into these two before deleting it.
*/}}
{{- define "meshinit.certs.servingSecretName" -}}
{{ include "meshinit.fullname" . }}-webhook-serving
{{- end -}}

{{- define "meshinit.certs.caSecretName" -}}
{{ include "meshinit.fullname" . }}-webhook-signer
{{- end -}}

{{/* certManager.enabled: the serving Certificate, and the chart's CA chain. */}}
{{- define "meshinit.certs.certificateName" -}}
{{ include "meshinit.fullname" . }}-webhook
{{- end -}}

{{- define "meshinit.certs.caName" -}}
{{ include "meshinit.fullname" . }}-webhook-ca
{{- end -}}

{{- define "meshinit.certs.selfSignedIssuerName" -}}
{{ include "meshinit.fullname" . }}-webhook-selfsigned
{{- end -}}

{{- define "meshinit.certs.dir" -}}
/var/run/meshinit/serving-certs
{{- end -}}

{{/*
The webhook's --cert-mode, from the values: cert-manager
(certManager.enabled), files (certs.existingSecret) or self-managed.
*/}}
{{- define "meshinit.certs.mode" -}}
{{- if and .Values.certManager.enabled .Values.certs.existingSecret -}}
{{- fail "certManager.enabled and certs.existingSecret are both true: set at most one (certManager.enabled: cert-manager issues the serving certificate; certs.existingSecret: you provide it; neither: the webhook manages it)" -}}
{{- else if .Values.certManager.enabled -}}
cert-manager
{{- else if .Values.certs.existingSecret -}}
files
{{- else -}}
self-managed
{{- end -}}
{{- end -}}

{{- define "meshinit.certs.annotations" -}}
{{- if eq (include "meshinit.certs.mode" .) "cert-manager" -}}
cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "meshinit.certs.certificateName" .) }}
{{- end -}}
{{- end -}}

{{- define "meshinit.certs.args" -}}
{{- $mode := include "meshinit.certs.mode" . -}}
- --cert-mode={{ $mode }}
- --cert-dir={{ include "meshinit.certs.dir" . }}
{{- if eq $mode "cert-manager" }}
- --cert-secret={{ include "meshinit.certs.secretName" . }}
{{- end }}
{{- if ne $mode "files" }}
- --service-namespace={{ .Release.Namespace }}
{{- end }}
{{- if eq $mode "self-managed" }}
- --cert-secret={{ include "meshinit.certs.servingSecretName" . }}
- --cert-ca-secret={{ include "meshinit.certs.caSecretName" . }}
- --cert-legacy-secret={{ include "meshinit.certs.secretName" . }}
- --service-name={{ include "meshinit.certs.serviceName" . }}
- --webhook-config-name={{ include "meshinit.certs.webhookConfigName" . }}
{{- with .Values.certs.selfManaged.caValidity }}
- --cert-ca-validity={{ . }}
{{- end }}
{{- with .Values.certs.selfManaged.validity }}
- --cert-validity={{ . }}
{{- end }}
{{- with .Values.certs.selfManaged.propagationDelay }}
- --cert-propagation-delay={{ . }}
{{- end }}
{{- end }}
{{- if eq $mode "cert-manager" }}
- --cert-manager-certificate={{ include "meshinit.certs.certificateName" . }}
{{- end }}
{{- end -}}

{{- define "meshinit.certs.volumes" -}}
- name: serving-certs
{{- if eq (include "meshinit.certs.mode" .) "self-managed" }}
  emptyDir: {}
{{- else }}
  secret:
    secretName: {{ include "meshinit.certs.secretName" . }}
{{- end }}
{{- end -}}

{{- define "meshinit.certs.volumeMounts" -}}
- name: serving-certs
  mountPath: {{ include "meshinit.certs.dir" . }}
  readOnly: {{ ne (include "meshinit.certs.mode" .) "self-managed" }}
{{- end -}}

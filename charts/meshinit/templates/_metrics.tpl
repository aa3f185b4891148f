{{/*
The webhook's metrics for a Prometheus Operator (values: metrics): the
ServiceMonitor or PodMonitor, the scraper's ServiceAccount and token, the
PrometheusRule and the Grafana dashboard. Every object needs the webhook
(injector webhook: "meshinit.metrics.enabled").
*/}}

{{/* "true" when the webhook runs, so it has metrics to scrape. */}}
{{- define "meshinit.metrics.enabled" -}}
{{- if eq (include "meshinit.injector" .) "webhook" }}true{{ end -}}
{{- end -}}

{{/* "true" when a ServiceMonitor or PodMonitor scrapes the webhook. */}}
{{- define "meshinit.metrics.scraped" -}}
{{- if and (include "meshinit.metrics.enabled" .) (or .Values.metrics.serviceMonitor.enabled .Values.metrics.podMonitor.enabled) }}true{{ end -}}
{{- end -}}

{{/*
The job label of the webhook's series, the same from either monitor (the
ServiceMonitor's default, its Service's name; the PodMonitor sets it), so
the alerts and the dashboard select it alike.
*/}}
{{- define "meshinit.metrics.job" -}}
{{ include "meshinit.fullname" . }}-webhook-metrics
{{- end -}}

{{/* The PromQL label matchers of the webhook's series. */}}
{{- define "meshinit.metrics.selector" -}}
job="{{ include "meshinit.metrics.job" . }}", namespace="{{ .Release.Namespace }}"
{{- end -}}

{{- define "meshinit.metrics.scraperName" -}}
{{ include "meshinit.fullname" . }}-metrics-scraper
{{- end -}}

{{/* The Secret whose ca.crt signed the serving certificate, per mode. */}}
{{- define "meshinit.metrics.caSecretName" -}}
{{- if eq (include "meshinit.certs.mode" .) "self-managed" -}}
{{ include "meshinit.certs.servingSecretName" . }}
{{- else -}}
{{ include "meshinit.certs.secretName" . }}
{{- end -}}
{{- end -}}

{{/*
An endpoint's scrape settings, the same for both monitors: HTTPS, the
scraper's token, the serving certificate checked against its CA for the
Service's name. Argument: (dict "monitor" <values> "root" $).
*/}}
{{- define "meshinit.metrics.endpoint" -}}
{{- $root := .root -}}
port: metrics
path: /metrics
scheme: https
{{- with .monitor.interval }}
interval: {{ . }}
{{- end }}
{{- with .monitor.scrapeTimeout }}
scrapeTimeout: {{ . }}
{{- end }}
authorization:
  type: Bearer
  credentials:
    name: {{ include "meshinit.metrics.scraperName" $root }}-token
    key: token
tlsConfig:
  ca:
    secret:
      name: {{ include "meshinit.metrics.caSecretName" $root }}
      key: ca.crt
  serverName: {{ include "meshinit.certs.serviceName" $root }}.{{ $root.Release.Namespace }}.svc
{{- end -}}

{{/* Common labels for every object the chart creates. */}}
{{- define "meshinit.labels" -}}
app.kubernetes.io/name: meshinit
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Full name used as the prefix of cluster-scoped objects. */}}
{{- define "meshinit.fullname" -}}
{{- if contains "meshinit" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-meshinit" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
An image reference "repository:tag" from an image value ({repository, tag}),
the tag defaulting to the chart's appVersion. Argument: (dict "image" <value>
"root" $).
*/}}
{{- define "meshinit.image" -}}
{{ printf "%s:%s" .image.repository (.image.tag | default .root.Chart.AppVersion) }}
{{- end -}}

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
An image reference from an image value ({repository, tag, digest}):
"repository@digest" when digest is set (a release pins every image by
digest), else "repository:tag", the tag defaulting to the chart's
appVersion. global.imageRegistry, when set, replaces the repository's
registry (its first component when that is a host: it has a "." or a ":",
or is localhost), or is put before a repository without one, so a mirror
serves every image under the same paths and digests. Argument: (dict
"image" <value> "root" $).
*/}}
{{- define "meshinit.image" -}}
{{- $repo := .image.repository -}}
{{- $mirror := "" -}}
{{- if .root.Values.global -}}{{- $mirror = .root.Values.global.imageRegistry | default "" | trimSuffix "/" -}}{{- end -}}
{{- if $mirror -}}
{{- $first := regexFind "^[^/]+" $repo -}}
{{- if and (contains "/" $repo) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) -}}
{{- $repo = printf "%s/%s" $mirror (trimPrefix (printf "%s/" $first) $repo) -}}
{{- else -}}
{{- $repo = printf "%s/%s" $mirror $repo -}}
{{- end -}}
{{- end -}}
{{- if .image.digest -}}
{{ printf "%s@%s" $repo .image.digest }}
{{- else -}}
{{ printf "%s:%s" $repo (.image.tag | default .root.Chart.AppVersion) }}
{{- end -}}
{{- end -}}

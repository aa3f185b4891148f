{{- /*
The mesh presets (values: mesh). Each preset is one file,
presets/<mesh>.yaml, the only place its values are written (with where
each was read in the mesh's source): redirect settings, placement, proxy
containers and the mesh's pod annotations meshinit reads. The chart puts a
preset's values under the ones the user sets (each value set wins), writes
its annotations into the webhook's configuration (webhook.Config
MeshAnnotations, read by redirect.FromPodAnnotations), and reads them in the
MutatingAdmissionPolicy (_inject.tpl) and the RedirectPolicy's policy
(policy-helpers.tpl) with the same meaning. This file renders to nothing.
*/ -}}

{{- /* meshinit.mesh.preset: the selected preset as JSON, {} without one. */ -}}
{{- define "meshinit.mesh.preset" -}}
{{- if .Values.mesh -}}
{{- $file := printf "presets/%s.yaml" .Values.mesh -}}
{{- $data := .Files.Get $file -}}
{{- if not $data }}{{ fail (printf "mesh %q: the chart has no preset %s (istio, linkerd, kuma, consul)" .Values.mesh $file) }}{{ end -}}
{{- $data | fromYaml | toJson -}}
{{- else -}}
{}
{{- end -}}
{{- end -}}

{{- /*
meshinit.mesh.annotations: the preset's annotations as JSON, [] without one:
each {annotation, setting} (read as that setting) or {annotation, values}
(checked only).
*/ -}}
{{- define "meshinit.mesh.annotations" -}}
{{- (include "meshinit.mesh.preset" . | fromJson).annotations | default list | toJson -}}
{{- end -}}

{{- /*
meshinit.mesh.annotationOf: the mesh annotation read as the setting key
given, or "". Argument: (dict "key" <key> "root" $).
*/ -}}
{{- define "meshinit.mesh.annotationOf" -}}
{{- range include "meshinit.mesh.annotations" .root | fromJsonArray }}{{ if eq (.setting | default "") $.key }}{{ .annotation }}{{ end }}{{ end -}}
{{- end -}}

{{- /* meshinit.placement: inject.placement, else the preset's, else first. */ -}}
{{- define "meshinit.placement" -}}
{{- .Values.inject.placement | default (include "meshinit.mesh.preset" . | fromJson).placement | default "first" -}}
{{- end -}}

{{- /*
meshinit.policy.proxyContainerEntries: policy.proxyContainers, else the
preset's, as JSON.
*/ -}}
{{- define "meshinit.policy.proxyContainerEntries" -}}
{{- .Values.policy.proxyContainers | default (include "meshinit.mesh.preset" . | fromJson).proxyContainers | default list | toJson -}}
{{- end -}}

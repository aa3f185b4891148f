{{- /*
The trusted proxy containers of the RedirectPolicy's policy
(policy-validatingadmissionpolicy.yaml): the containers that may run as the
proxy's UID or GID, whose traffic is never redirected. A container is trusted
for what it runs, not for its name and image alone: everything that decides
what its process does is compared with what the platform engineer wrote in
policy.proxyContainers (values.yaml says which fields, and how). This file
renders to nothing.
*/ -}}

{{- /*
meshinit.policy.trustedEntries: policy.proxyContainers and, while
tests.enabled, the helm test's proxy (trusted only in the test's own
namespace), as a CEL literal (celLiteral), one map per entry:
  name        the container's name
  images      the repository as the pod may write it: every form the
              container runtime reads as the same repository (see
              meshinit.policy.imageForms)
  suffix      a regular expression the rest of the pod's image must match
              (the tag and digest the entry allows; see imageSuffix)
  namespaces  where the entry is trusted; [] everywhere
  command     the command, exactly; [] for the image's own
  args        each argument as ["=", value] or ["~", anchored pattern]
  argIdx      0 .. len(args)-1 (CEL has no index loop before 1.32)
  env         each allowed variable as ["=", name, value],
              ["~", name, anchored pattern] or ["from", name, valueFrom]
  envFrom, workingDir, volumeMounts, volumes, execs: as written
*/ -}}
{{- define "meshinit.policy.trustedEntries" -}}
{{- $out := list -}}
{{- $entries := include "meshinit.policy.proxyContainerEntries" . | fromJsonArray -}}
{{- if .Values.tests.enabled -}}
{{- $port := include "meshinit.redirect.setting" (dict "key" "outbound-proxy-port" "root" .) -}}
{{- $test := dict "name" "proxy" "image" (include "meshinit.image" (dict "image" .Values.tests.image.proxy "root" .)) "args" (list "-name" "proxy" "-listen" (printf ":%v" $port)) "namespaces" (list (printf "%s-test" (include "meshinit.fullname" .))) -}}
{{- $entries = append $entries $test -}}
{{- end -}}
{{- range $e := $entries -}}
{{- $ref := include "meshinit.policy.imageRef" $e.image | fromJson -}}
{{- $args := list -}}
{{- range $a := $e.args | default list -}}
{{- if kindIs "string" $a }}{{ $args = append $args (list "=" $a) }}{{ else }}{{ $args = append $args (list "~" (printf "^(?:%s)$" $a.pattern)) }}{{ end -}}
{{- end -}}
{{- $env := list -}}
{{- range $v := $e.env | default list -}}
{{- if hasKey $v "valueFrom" }}{{ $env = append $env (list "from" $v.name $v.valueFrom) }}
{{- else if hasKey $v "pattern" }}{{ $env = append $env (list "~" $v.name (printf "^(?:%s)$" $v.pattern)) }}
{{- else }}{{ $env = append $env (list "=" $v.name ($v.value | default "")) }}{{ end -}}
{{- end -}}
{{- $out = append $out (dict
  "name" $e.name
  "images" (include "meshinit.policy.imageForms" $ref | fromJsonArray)
  "suffix" (include "meshinit.policy.imageSuffix" $ref)
  "namespaces" ($e.namespaces | default list)
  "command" ($e.command | default list)
  "args" $args
  "argIdx" (until (len $args))
  "env" $env
  "envFrom" ($e.envFrom | default list)
  "workingDir" ($e.workingDir | default "")
  "volumeMounts" ($e.volumeMounts | default list)
  "volumes" ($e.volumes | default list)
  "execs" ($e.execs | default list)) -}}
{{- end -}}
{{- include "meshinit.policy.celLiteral" $out -}}
{{- end -}}

{{- /*
meshinit.policy.celLiteral: a value (from values.yaml or built above) as a
CEL literal. CEL wants the values of a map literal, and the elements of a
list literal, of one type; JSON's do not have to be, so each is wrapped in
dyn().
*/ -}}
{{- define "meshinit.policy.celLiteral" -}}
{{- if kindIs "map" . -}}
{ {{- range $i, $k := keys . | sortAlpha }}{{ if $i }}, {{ end }}{{ toJson $k }}: dyn({{ include "meshinit.policy.celLiteral" (get $ $k) }}){{ end -}} }
{{- else if kindIs "slice" . -}}
[ {{- range $i, $v := . }}{{ if $i }}, {{ end }}dyn({{ include "meshinit.policy.celLiteral" $v }}){{ end -}} ]
{{- else -}}
{{ toJson . }}
{{- end -}}
{{- end -}}

{{- /*
meshinit.policy.imageRef: an image reference read as the container runtime
reads it (github.com/distribution/reference, ParseDockerRef, which
containerd's CRI uses), as JSON {domain, path, tag, digest}: the digest after
"@"; the tag after the last ":" that follows the last "/"; the first
path component is a registry when it contains "." or ":", is "localhost",
or has upper-case letters, else the registry is docker.io; index.docker.io
is docker.io, where a one-component path is in library/.
*/ -}}
{{- define "meshinit.policy.imageRef" -}}
{{- $digest := "" -}}
{{- $rest := . -}}
{{- if contains "@" . }}{{ $parts := splitn "@" 2 . }}{{ $rest = $parts._0 }}{{ $digest = $parts._1 }}{{ end -}}
{{- $tag := regexFind ":[^:/]*$" $rest | trimPrefix ":" -}}
{{- $name := ternary (trimSuffix (printf ":%s" $tag) $rest) $rest (ne $tag "") -}}
{{- $parts := splitList "/" $name -}}
{{- $first := first $parts -}}
{{- $domain := "docker.io" -}}
{{- $path := $name -}}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost") (ne (lower $first) $first)) -}}
{{- $domain = $first -}}
{{- $path = join "/" (rest $parts) -}}
{{- end -}}
{{- if eq $domain "index.docker.io" }}{{ $domain = "docker.io" }}{{ end -}}
{{- if and (eq $domain "docker.io") (not (contains "/" $path)) }}{{ $path = printf "library/%s" $path }}{{ end -}}
{{- toJson (dict "domain" $domain "path" $path "tag" $tag "digest" $digest) -}}
{{- end -}}

{{- /*
meshinit.policy.imageForms: the ways a pod may write the repository of an
imageRef so that the runtime reads the same one: domain/path, and on
docker.io also index.docker.io/path and path without the registry (and,
for library/ images, without library/ too).
*/ -}}
{{- define "meshinit.policy.imageForms" -}}
{{- $forms := list (printf "%s/%s" .domain .path) -}}
{{- if eq .domain "docker.io" -}}
{{- $forms = append $forms (printf "index.docker.io/%s" .path) -}}
{{- $forms = append $forms .path -}}
{{- if hasPrefix "library/" .path -}}
{{- $short := trimPrefix "library/" .path -}}
{{- $forms = concat $forms (list $short (printf "docker.io/%s" $short) (printf "index.docker.io/%s" $short)) -}}
{{- end -}}
{{- end -}}
{{- toJson $forms -}}
{{- end -}}

{{- /*
meshinit.policy.imageSuffix: the anchored regular expression that what
follows the repository in a pod's image must match for an imageRef: with a
digest, that digest (any tag before it: the runtime pulls by the digest);
with a tag and no digest, exactly that tag and no digest (a digest would
win over the tag); with neither, any tag and digest of the repository.
*/ -}}
{{- define "meshinit.policy.imageSuffix" -}}
{{- $tag := `:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}` -}}
{{- $digest := `@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}` -}}
{{- if .digest -}}
^(?:{{ $tag }})?@{{ regexQuoteMeta .digest }}$
{{- else if .tag -}}
^:{{ regexQuoteMeta .tag }}$
{{- else -}}
^(?:{{ $tag }})?(?:{{ $digest }})?$
{{- end -}}
{{- end -}}

{{- /*
The injector (values: injector) and, in policy mode, the CEL of the
MutatingAdmissionPolicy that injects meshinit's init container inside the
API server (inject-mutatingadmissionpolicy.yaml) and of the two
ValidatingAdmissionPolicies that refuse, or warn about, what the webhook
refuses or warns about (inject-validatingadmissionpolicies.yaml). Each piece
is written once here and rendered into all three, after the Go it mirrors:

  the opt-in decision   webhook/decide.go, as the webhook's selectors
                        (webhook-mutatingwebhookconfiguration.yaml) send it pods
  each setting          redirect.FromAnnotations over the chart's values: read
                        and rendered by its kind (port, id, ports, cidrs, ids,
                        names, enum)
                        from the settings table (meshinit.redirect.table,
                        generated from redirect/settings.go), so a new setting
                        of a known kind needs no change here
  the settings' checks  redirect.Config.Validate, rule by rule, by key
  PodSecurity           webhook/podsecurity.go
  the container         webhook/container.go
  the status            webhook/status.go: the hash of the webhook's
                        configuration file, which the chart renders in both
                        modes (webhook-configmap.yaml)

Messages are the webhook's, word for word, for values of printable ASCII
(CEL's strings.quote escapes fewer characters than Go's strconv.Quote, and
cuts a long value after 64 characters where Go cuts after 64 bytes). The
charts tests run every piece against the Go code (inject_*_test.go), and the
webhook's tests run its golden pods through both injectors on a real API
server.
*/ -}}

{{- /*
meshinit.injector: "webhook" or "policy" (values: injector), refusing policy
where the API server does not serve MutatingAdmissionPolicy v1.
*/ -}}
{{- define "meshinit.injector" -}}
{{- if and (eq .Values.injector "policy") (not (.Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy")) -}}
{{- fail (printf "injector=policy needs an API server that serves admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (Kubernetes 1.36 or newer), and this one (%s) does not: use injector=webhook, or upgrade the cluster (helm template needs --api-versions admissionregistration.k8s.io/v1/MutatingAdmissionPolicy)" .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- .Values.injector -}}
{{- end -}}

{{- /* meshinit.inject.name: the policies' name (and their bindings'). */ -}}
{{- define "meshinit.inject.name" -}}
{{ include "meshinit.fullname" . }}-inject
{{- end -}}

{{- /*
meshinit.inject.status: the meshinit.io/status annotation of an injected pod
(webhook.Status): the init container's name and the first 16 hex digits of
the SHA-256 of the webhook's configuration file, the bytes the ConfigMap
holds (a YAML literal block ends them with one newline).
*/ -}}
{{- define "meshinit.inject.status" -}}
{{- $hash := printf "%s\n" (include "meshinit.webhook.config" .) | sha256sum | trunc 16 -}}
{"initContainers":["meshinit-redirect"],"config":{{ $hash | toJson }}}
{{- end -}}

{{- /* meshinit.inject.var: the variables' prefix of the setting whose key is given. */ -}}
{{- define "meshinit.inject.var" -}}
s{{ . | replace "-" "_" | camelcase }}
{{- end -}}

{{- /*
meshinit.inject.quote: the CEL string expression given, quoted as Go's
redirect.QuoteShort quotes: cut after 64 characters, then "...".
*/ -}}
{{- define "meshinit.inject.quote" -}}
({{ . }}.size() > 64 ? strings.quote({{ . }}.substring(0, 64)) + '...' : strings.quote({{ . }}))
{{- end -}}

{{- /*
meshinit.inject.portError: why the bound (a CEL string, trimmed) of a port
list entry is not a port, as redirect's parsePort says it, or ''. Argument:
(dict "bound" <CEL> "entry" <CEL>). Digits only (no sign, strconv.ParseUint
base 10), at most 10 of them after leading zeros (a uint32), 1-65535.
*/ -}}
{{- define "meshinit.inject.portError" -}}
(!{{ .bound }}.matches('^0*[0-9]{1,10}$') || int({{ .bound }}) > 4294967295 ? {{ include "meshinit.inject.quote" .entry }} + ' is not a port number or range (want 1-65535, or first-last)' : int({{ .bound }}) < 1 || int({{ .bound }}) > 65535 ? 'port ' + string(int({{ .bound }})) + ' in ' + {{ include "meshinit.inject.quote" .entry }} + ' is out of range 1-65535' : '')
{{- end -}}

{{- /*
meshinit.inject.settings: the settings table with, for each setting, its
variables' prefix (var), the chart's value (value) and redirect.Defaults'
(default), and, with a mesh preset, the mesh's annotation read as it (mesh,
else "") and the variables' prefix of that annotation read alone (meshVar),
as JSON.
*/ -}}
{{- define "meshinit.inject.settings" -}}
{{- $values := dict -}}
{{- range include "meshinit.redirect.settings" . | fromJsonArray }}{{ $_ := set $values (index . 0) (index . 1) }}{{ end -}}
{{- $defaults := dict -}}
{{- range splitList "\n" (include "meshinit.redirect.defaults" .) }}{{ $kv := splitn "=" 2 . }}{{ $_ := set $defaults $kv._0 $kv._1 }}{{ end -}}
{{- $out := list -}}
{{- $root := . -}}
{{- range include "meshinit.redirect.table" . | fromJsonArray -}}
{{- $mesh := include "meshinit.mesh.annotationOf" (dict "key" .key "root" $root) -}}
{{- $out = append $out (merge (dict "var" (include "meshinit.inject.var" .key) "value" (get $values .key) "default" (get $defaults .key)
  "mesh" $mesh "meshVar" (ternary (printf "%sMesh" (include "meshinit.inject.var" .key)) "" (ne $mesh ""))) .) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{- /*
meshinit.inject.setting: one setting of meshinit.inject.settings, by key,
failing when the table has none (a rule below names a setting that was
renamed or removed). Argument: (dict "key" <key> "root" $).
*/ -}}
{{- define "meshinit.inject.setting" -}}
{{- $found := dict -}}
{{- range include "meshinit.inject.settings" .root | fromJsonArray }}{{ if eq .key $.key }}{{ $found = . }}{{ end }}{{ end -}}
{{- if not $found }}{{ fail (printf "_inject.tpl names setting %s, which the settings table (redirect/settings.go) does not have" .key) }}{{ end -}}
{{- toJson $found -}}
{{- end -}}

{{- /*
meshinit.inject.settingVariables: the variables of one setting (an entry of
meshinit.inject.settings), as redirect.FromAnnotations reads it over the
chart's value:
  <var>Arg    its value as redirect.Config.Args renders it (only read when
              <var>Error is '')
For a setting pods set by annotation, also:
  <var>Set    the pod has the annotation
  <var>Raw    the annotation's value, else the chart's
  <var>Error  why Raw cannot be read (the error after "invalid <name>
              <value>: "), or ''
and by kind: lists refuse a value over the list limits before reading it
(<var>Limit); <var>All is "*"; <var>Entries are the comma-separated entries,
trimmed (Go's strings.TrimSpace is CEL's trim()), empty ones dropped;
<var>EntryErrors why each bad one is bad, in order (Go stops at the first);
ports keep each entry's [first, last] in <var>Ranges, CIDRs their canonical
form in <var>Prefixes (a bare address is one host; k8s cidr() and ip() read
what net/netip reads, but refuse IPv4-mapped IPv6 addresses, which Go reads
to refuse them by name: an entry k8s refuses that reads once every "ffff"
group is changed is one). The rendered list keeps the entries as written,
each canonical, a repeat dropped (distinct() keeps the first), as Go does.

Where the chart's value is redirect's default, a pod without the annotation
gets Error, Arg, Ranges and Prefixes as literals (Go's defaults are valid
and written as Config.Args renders them): most pods set few annotations,
and reading every default again on each evaluation was most of what the
policies cost.
*/ -}}
{{- define "meshinit.inject.settingVariables" -}}
{{- $v := printf "variables.%s" .var -}}
{{- $fixed := and (ne .annotation "") (eq .value .default) -}}
{{- $fi := ternary ")" "" $fixed -}}
{{- $none := has .default (list "*" "") -}}
{{- if not .annotation }}
- name: {{ .var }}Arg
  expression: {{ .value | toJson | toJson }}
{{- else }}
{{- if .mesh }}
{{- include "meshinit.inject.meshVariables" . }}
{{- else }}
- name: {{ .var }}Set
  expression: {{ printf "'%s' in variables.annotations" .annotation | toJson }}
- name: {{ .var }}Raw
  expression: {{ printf "variables.annotations[?'%s'].orValue(%s)" .annotation (.value | toJson) | toJson }}
{{- end }}
{{- if has .kind (list "ports" "cidrs" "ids" "names") }}
- name: {{ .var }}Limit
  expression: |-
    {{ $v }}Raw.size() > {{ include "meshinit.redirect.maxListBytes" . }} || bytes({{ $v }}Raw).size() > {{ include "meshinit.redirect.maxListBytes" . }}
      ? 'the list is ' + string(bytes({{ $v }}Raw).size()) + ' bytes long, more than the {{ include "meshinit.redirect.maxListBytes" . }} allowed'
      : {{ $v }}Raw.split(',', {{ add1 (include "meshinit.redirect.maxListEntries" . | atoi) }}).size() > {{ include "meshinit.redirect.maxListEntries" . }}
      ? 'the list has ' + string({{ $v }}Raw.size() - {{ $v }}Raw.replace(',', '').size() + 1) + ' entries, more than the {{ include "meshinit.redirect.maxListEntries" . }} allowed'
      : ''
- name: {{ .var }}All
  expression: |-
    {{ $v }}Limit == '' && {{ $v }}Raw.trim() == '*'
- name: {{ .var }}Entries
  expression: |-
    {{ $v }}Limit != '' || {{ $v }}All ? [] : {{ $v }}Raw.split(',').map(e, e.trim()).filter(e, e != '')
{{- end }}
{{- if eq .kind "ports" }}
- name: {{ .var }}Bounds
  expression: |-
    {{ $v }}Entries.map(e, e.contains('-')
      ? [e, e.substring(0, e.indexOf('-')).trim(), e.substring(e.indexOf('-') + 1).trim()] : [e, e, e])
- name: {{ .var }}BoundErrors
  expression: |-
    {{ $v }}Bounds.map(b, [{{ include "meshinit.inject.portError" (dict "bound" "b[1]" "entry" "b[0]") }},
      {{ include "meshinit.inject.portError" (dict "bound" "b[2]" "entry" "b[0]") }}])
- name: {{ .var }}EntryErrors
  expression: |-
    lists.range({{ $v }}Bounds.size()).map(i, {{ $v }}Bounds[i][0] == '*' ? '"*" must stand alone, not in a list'
      : {{ $v }}BoundErrors[i][0] != '' ? {{ $v }}BoundErrors[i][0] : {{ $v }}BoundErrors[i][1] != '' ? {{ $v }}BoundErrors[i][1]
      : int({{ $v }}Bounds[i][2]) < int({{ $v }}Bounds[i][1]) ? {{ include "meshinit.inject.quote" (printf "%sBounds[i][0]" $v) }} + ': range end is below its start'
      : '').filter(m, m != '')
{{- $ranges := list }}
{{- if not $none }}{{ range splitList "," .default }}{{ $b := splitList "-" . }}{{ $ranges = append $ranges (printf "[%s, %s]" (first $b) (last $b)) }}{{ end }}{{ end }}
- name: {{ .var }}Ranges
  expression: |-
    {{ if $fixed }}!{{ $v }}Set ? {{ printf "[%s]" (join ", " $ranges) }} : ({{ end }}{{ $v }}Limit != '' || {{ $v }}EntryErrors.size() > 0 ? [] : {{ $v }}Bounds.map(b, [int(b[1]), int(b[2])]){{ $fi }}
- name: {{ .var }}Arg
  expression: |-
    {{ if $fixed }}!{{ $v }}Set ? {{ .default | toJson }} : ({{ end }}{{ $v }}All ? '*' : {{ $v }}Ranges.map(r, r[0] == r[1] ? string(r[0]) : string(r[0]) + '-' + string(r[1])).distinct().join(','){{ $fi }}
{{- else if eq .kind "cidrs" }}
- name: {{ .var }}EntryErrors
  expression: |-
    {{ $v }}Entries.map(e, e == '*' ? '"*" must stand alone, not in a list'
      : (e.contains('/') ? isCIDR(e) : isIP(e)) ? ''
      : (e.contains('/') ? isCIDR(e.lowerAscii().replace('ffff', 'fffe')) : isIP(e.lowerAscii().replace('ffff', 'fffe')))
        ? {{ include "meshinit.inject.quote" "e" }} + ' is an IPv4-mapped IPv6 address: write it as IPv4 (e.g. 10.0.0.1)'
      : e.contains('/') ? {{ include "meshinit.inject.quote" "e" }} + ' is not a CIDR (e.g. 10.0.0.0/8 or fd00::/8)'
      : {{ include "meshinit.inject.quote" "e" }} + ' is not an IP address or CIDR (e.g. 10.0.0.0/8)').filter(m, m != '')
- name: {{ .var }}Prefixes
  expression: |-
    {{ if $fixed }}!{{ $v }}Set ? {{ ternary "[]" (splitList "," .default | toJson) $none }} : ({{ end }}{{ $v }}Limit != '' || {{ $v }}EntryErrors.size() > 0 ? [] : {{ $v }}Entries.map(e,
      string(e.contains('/') ? cidr(e).masked() : cidr(e + (ip(e).family() == 4 ? '/32' : '/128')))){{ $fi }}
- name: {{ .var }}Arg
  expression: |-
    {{ if $fixed }}!{{ $v }}Set ? {{ .default | toJson }} : ({{ end }}{{ $v }}All ? '*' : {{ $v }}Prefixes.distinct().join(','){{ $fi }}
{{- else if eq .kind "ids" }}
- name: {{ .var }}EntryErrors
  expression: |-
    {{ $v }}Entries.map(e, e == '*' ? '"*" must stand alone, not in a list'
      : e.matches('^0*[0-9]{1,10}$') && int(e) <= 4294967294 ? ''
      : {{ include "meshinit.inject.quote" "e" }} + ' is not a numeric ID 0-4294967294 (names are not looked up)').filter(m, m != '')
- name: {{ .var }}Arg
  expression: |-
    {{ if $fixed }}!{{ $v }}Set ? {{ .default | toJson }} : ({{ end }}{{ $v }}Limit != '' || {{ $v }}All || {{ $v }}EntryErrors.size() > 0 ? '' : {{ $v }}Entries.map(e, string(int(e))).distinct().join(','){{ $fi }}
{{- else if eq .kind "names" }}
- name: {{ .var }}EntryErrors
  expression: |-
    {{ $v }}Entries.map(e, e == '*' ? '"*" must stand alone, not in a list'
      : e.matches('^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}$') ? ''
      : {{ include "meshinit.inject.quote" "e" }} + ' is not an interface name: 1-15 letters, digits, "_", "." or "-", not starting with "-" or "."').filter(m, m != '')
- name: {{ .var }}Arg
  expression: |-
    {{ if $fixed }}!{{ $v }}Set ? {{ .default | toJson }} : ({{ end }}{{ $v }}Limit != '' || {{ $v }}All || {{ $v }}EntryErrors.size() > 0 ? '' : {{ $v }}Entries.distinct().join(','){{ $fi }}
{{- end }}
{{- if or (eq .kind "ports") (eq .kind "cidrs") }}
- name: {{ .var }}Error
  expression: |-
    {{ if $fixed }}!{{ $v }}Set ? '' : ({{ end }}{{ $v }}Limit != '' ? {{ $v }}Limit : {{ $v }}EntryErrors.size() > 0 ? {{ $v }}EntryErrors[0]
      {{- if .noAll }} : {{ $v }}All ? '"*" is not allowed in an exclude list; list them'{{ end }} : ''{{ $fi }}
{{- else if has .kind (list "ids" "names") }}
- name: {{ .var }}Error
  expression: |-
    {{ if $fixed }}!{{ $v }}Set ? '' : ({{ end }}{{ $v }}Limit != '' ? {{ $v }}Limit : {{ $v }}All ? {{ ternary "'\"*\" is not allowed: list the IDs'" "'\"*\" is not allowed: list the interfaces'" (eq .kind "ids") }}
      : {{ $v }}EntryErrors.size() > 0 ? {{ $v }}EntryErrors[0] : ''{{ $fi }}
{{- else if eq .kind "port" }}
- name: {{ .var }}Error
  expression: |-
    {{ if $fixed }}!{{ $v }}Set ? '' : ({{ end }}!{{ $v }}Raw.trim().matches('^0*[0-9]{1,5}$') || int({{ $v }}Raw.trim()) < 1 || int({{ $v }}Raw.trim()) > 65535 ? 'must be a TCP port 1-65535' : ''{{ $fi }}
- name: {{ .var }}Arg
  expression: |-
    {{ if $fixed }}!{{ $v }}Set ? {{ .default | toJson }} : ({{ end }}{{ $v }}Error == '' ? string(int({{ $v }}Raw.trim())) : ''{{ $fi }}
{{- else if eq .kind "id" }}
- name: {{ .var }}Error
  expression: |-
    {{ if $fixed }}!{{ $v }}Set ? '' : ({{ end }}!{{ $v }}Raw.trim().matches('^0*[0-9]{1,10}$') || int({{ $v }}Raw.trim()) > 4294967294 ? 'must be a numeric ID 0-4294967294' : ''{{ $fi }}
- name: {{ .var }}Arg
  expression: |-
    {{ if $fixed }}!{{ $v }}Set ? {{ .default | toJson }} : ({{ end }}{{ $v }}Error == '' ? string(int({{ $v }}Raw.trim())) : ''{{ $fi }}
{{- else if eq .kind "enum" }}
- name: {{ .var }}Error
  expression: "''"
- name: {{ .var }}Arg
  expression: {{ printf "%sRaw" $v | toJson }}
{{- else }}
{{- fail (printf "setting %s: kind %s has no CEL in _inject.tpl" .key .kind) }}
{{- end }}
{{- end }}
{{- end -}}

{{- /*
meshinit.inject.validateRules: redirect.Config.Validate's checks, in its
order, as CEL string expressions: each the error (after the setting's name
"annotation <annotation>" or "setting --<key>", as redirect names it) or ''.
Read only when every setting could be read.
*/ -}}
{{- define "meshinit.inject.validateRules" -}}
{{- $root := . -}}
{{- $get := dict -}}
{{- range include "meshinit.inject.settings" . | fromJsonArray }}{{ $_ := set $get .key . }}{{ end -}}
{{- $name := dict -}}
{{- range $get }}{{ $_ := set $name .key (ternary (printf "annotation %s" .annotation) (printf "setting --%s" .key) (ne .annotation "")) }}{{ end -}}
{{- $in := include "meshinit.inject.setting" (dict "key" "inbound-proxy-port" "root" .) | fromJson -}}
{{- $out := include "meshinit.inject.setting" (dict "key" "outbound-proxy-port" "root" .) | fromJson -}}
{{- $rules := list -}}
{{- $rules = append $rules (printf "variables.%sArg == variables.%sArg ? 'invalid %s ' + %s + ': must differ from the outbound proxy port' : ''" $in.var $out.var (get $name $in.key) (include "meshinit.inject.quote" (printf "variables.%sArg" $in.var))) -}}
{{- $dns := include "meshinit.inject.setting" (dict "key" "dns-proxy-port" "root" .) | fromJson -}}
{{- $capture := include "meshinit.inject.setting" (dict "key" "capture-dns" "root" .) | fromJson -}}
{{- $rules = append $rules (printf "variables.%sArg != 'off' && (variables.%sArg == variables.%sArg || variables.%sArg == variables.%sArg) ? 'invalid %s ' + %s + ': must differ from the inbound and outbound proxy ports while capture-dns is ' + variables.%sArg + ': captured TCP DNS would reach the TCP proxy\\'s listener' : ''" $capture.var $dns.var $out.var $dns.var $in.var (get $name $dns.key) (include "meshinit.inject.quote" (printf "variables.%sArg" $dns.var)) $capture.var) -}}
{{- range list "exclude-inbound-ports" "ignored-inbound-ports" "exclude-outbound-ports" -}}
{{- $s := include "meshinit.inject.setting" (dict "key" . "root" $root) | fromJson -}}
{{- $rules = append $rules (printf "variables.%sArg == '*' ? 'invalid %s \"*\": \"*\" is not allowed in an exclude list; list ports or ranges' : ''" $s.var (get $name $s.key)) -}}
{{- end -}}
{{- $incl := include "meshinit.inject.setting" (dict "key" "include-inbound-ports" "root" .) | fromJson -}}
{{- $excl := include "meshinit.inject.setting" (dict "key" "exclude-inbound-ports" "root" .) | fromJson -}}
{{- if not (and $incl.annotation $excl.annotation) }}{{ fail "_inject.tpl: the include/exclude overlap rule reads include-inbound-ports and exclude-inbound-ports as pods set them; write it for a setting pods cannot set" }}{{ end -}}
{{- $rules = append $rules (printf "variables.inboundOverlap.size() == 0 ? '' : 'invalid %s ' + %s + ': entry ' + (variables.inboundOverlap[0][0] == variables.inboundOverlap[0][1] ? string(variables.inboundOverlap[0][0]) : string(variables.inboundOverlap[0][0]) + '-' + string(variables.inboundOverlap[0][1])) + ' overlaps include-inbound-ports; a port is either included or excluded'" (get $name $excl.key) (include "meshinit.inject.quote" (printf "variables.%sArg" $excl.var))) -}}
{{- $oincl := include "meshinit.inject.setting" (dict "key" "include-outbound-ports" "root" .) | fromJson -}}
{{- $oexcl := include "meshinit.inject.setting" (dict "key" "exclude-outbound-ports" "root" .) | fromJson -}}
{{- if not (and $oincl.annotation $oexcl.annotation) }}{{ fail "_inject.tpl: the include/exclude overlap rule reads include-outbound-ports and exclude-outbound-ports as pods set them; write it for a setting pods cannot set" }}{{ end -}}
{{- $rules = append $rules (printf "variables.outboundOverlap.size() == 0 ? '' : 'invalid %s ' + %s + ': entry ' + (variables.outboundOverlap[0][0] == variables.outboundOverlap[0][1] ? string(variables.outboundOverlap[0][0]) : string(variables.outboundOverlap[0][0]) + '-' + string(variables.outboundOverlap[0][1])) + ' overlaps include-outbound-ports; a port is either included or excluded'" (get $name $oexcl.key) (include "meshinit.inject.quote" (printf "variables.%sArg" $oexcl.var))) -}}
{{- $cidrs := include "meshinit.inject.setting" (dict "key" "exclude-outbound-cidrs" "root" .) | fromJson -}}
{{- $rules = append $rules (printf "variables.%sArg == '*' ? 'invalid %s \"*\": \"*\" is not allowed; to capture no outbound traffic set include-outbound-cidrs to an empty list' : ''" $cidrs.var (get $name $cidrs.key)) -}}
{{- $ipv6 := include "meshinit.inject.setting" (dict "key" "ipv6" "root" .) | fromJson -}}
{{- range list "include-outbound-cidrs" "exclude-outbound-cidrs" -}}
{{- $s := include "meshinit.inject.setting" (dict "key" . "root" $root) | fromJson -}}
{{- if not $s.annotation }}{{ fail (printf "_inject.tpl: the ipv6 rule reads %s as pods set it; write it for a setting pods cannot set" $s.key) }}{{ end -}}
{{- $rules = append $rules (printf "variables.%sArg == 'off' && variables.%sPrefixes.exists(p, p.contains(':')) ? 'invalid %s ' + %s + ': ' + variables.%sPrefixes.filter(p, p.contains(':'))[0] + ' is an IPv6 CIDR but ipv6 is off; set ipv6 to auto or on, or remove it' : ''" $ipv6.var $s.var (get $name $s.key) (include "meshinit.inject.quote" (printf "variables.%sArg" $s.var)) $s.var) -}}
{{- end -}}
{{- range include "meshinit.inject.settings" . | fromJsonArray -}}
{{- if and (eq .kind "enum") .annotation -}}
{{- $rules = append $rules (printf "!(variables.%sArg in %s) ? 'invalid %s ' + %s + ': must be one of %s' : ''" .var (.values | toJson) (get $name .key) (include "meshinit.inject.quote" (printf "variables.%sArg" .var)) (join ", " .values)) -}}
{{- end -}}
{{- end -}}
{{- toJson $rules -}}
{{- end -}}

{{- /*
meshinit.inject.ifDefaults: for the overlap of two port lists, "<the pod
annotates neither> ? [] : " where the chart's values of both are redirect's
defaults (which overlap nowhere: they pass Config.Validate), else nothing.
Argument: the two settings (entries of meshinit.inject.settings).
*/ -}}
{{- define "meshinit.inject.ifDefaults" -}}
{{- $a := index . 0 }}{{ $b := index . 1 -}}
{{- if and (eq $a.value $a.default) (eq $b.value $b.default) -}}
!variables.{{ $a.var }}Set && !variables.{{ $b.var }}Set ? [] : {{/* the sum of the chunks follows */}}
{{- end -}}
{{- end -}}

{{- /*
meshinit.inject.conflictingLevels: the PodSecurity levels that forbid the
init container, as a list (CEL and YAML).
*/ -}}
{{- define "meshinit.inject.conflictingLevels" -}}
['baseline', 'restricted']
{{- end -}}

{{- /*
meshinit.inject.variables: every variable of the three policies.
*/ -}}
{{- define "meshinit.inject.variables" -}}
{{- $settings := include "meshinit.inject.settings" . | fromJsonArray -}}
- name: labels
  expression: "object.metadata.?labels.orValue({})"
- name: annotations
  expression: "object.metadata.?annotations.orValue({})"
# The opt-in decision: the webhook's checks (webhook/decide.go) on the pods
# its selectors send it. A pod label other than true or false is refused
# where the namespace opts in (elsewhere the selectors never send it).
- name: namespaceInjection
  expression: "namespaceObject.metadata.?labels[?'meshinit.io/injection'].orValue('')"
- name: podLabelSet
  expression: "'meshinit.io/inject' in variables.labels"
- name: podLabel
  expression: "variables.labels[?'meshinit.io/inject'].orValue('')"
- name: excludedNamespace
  expression: {{ printf "namespaceObject.metadata.name in ['kube-system', %s]" (.Release.Namespace | toJson) | toJson }}
- name: invalidLabel
  expression: |-
    !variables.excludedNamespace && variables.namespaceInjection == 'enabled'
      && variables.podLabelSet && !(variables.podLabel in ['true', 'false'])
- name: optedIn
  expression: |-
    !variables.excludedNamespace && !object.spec.?hostNetwork.orValue(false)
      && (variables.namespaceInjection == 'enabled' ? !variables.podLabelSet || variables.podLabel == 'true'
        : variables.namespaceInjection != 'disabled' && variables.podLabel == 'true')
# The settings (redirect.FromAnnotations over inject.redirect).
{{- range $settings }}
{{- if .mesh }}
{{- $alone := ternary (ternary "*" "" (hasPrefix "include-" .key)) .value (has .kind (list "ports" "cidrs" "ids" "names")) }}
{{- include "meshinit.inject.settingVariables" (dict "key" .key "kind" .kind "values" .values "var" .meshVar "annotation" .mesh
    "value" $alone "default" $alone "noAll" (hasPrefix "exclude-" .key)) }}
- name: {{ .meshVar }}Use
  expression: {{ printf "variables.%sSet && variables.%sError == ''" .meshVar .meshVar | toJson }}
{{- end }}
{{- include "meshinit.inject.settingVariables" . }}
{{- end }}
{{- $incl := include "meshinit.inject.setting" (dict "key" "include-inbound-ports" "root" .) | fromJson }}
{{- $excl := include "meshinit.inject.setting" (dict "key" "exclude-inbound-ports" "root" .) | fromJson }}
# The ranges of exclude-inbound-ports (as written) that overlap one of
# include-inbound-ports: redirect names the first. exists() stops at the
# first overlap, so only disjoint lists compare every pair; 64 ranges of the
# exclude list in each variable, so that no variable's cost comes near the
# API server's limit for one expression (celconfig.PerCallLimit) when both
# lists have the most entries.
{{- $chunks := div (add (include "meshinit.redirect.maxListEntries" . | atoi) 63) 64 }}
{{- range $k := until (int $chunks) }}
- name: inboundOverlap{{ $k }}
  expression: |-
    lists.range(variables.{{ $excl.var }}Ranges.size()).filter(i, i / 64 == {{ $k }}).map(i, variables.{{ $excl.var }}Ranges[i])
      .filter(b, variables.{{ $incl.var }}Ranges.exists(a, a[0] <= b[1] && b[0] <= a[1]))
{{- end }}
- name: inboundOverlap
  expression: |-
    {{ include "meshinit.inject.ifDefaults" (list $incl $excl) }}{{ range $k := until (int $chunks) }}{{ if $k }} + {{ end }}variables.inboundOverlap{{ $k }}{{ end }}
{{- $oincl := include "meshinit.inject.setting" (dict "key" "include-outbound-ports" "root" .) | fromJson }}
{{- $oexcl := include "meshinit.inject.setting" (dict "key" "exclude-outbound-ports" "root" .) | fromJson }}
# The same for exclude-outbound-ports and include-outbound-ports.
{{- range $k := until (int $chunks) }}
- name: outboundOverlap{{ $k }}
  expression: |-
    lists.range(variables.{{ $oexcl.var }}Ranges.size()).filter(i, i / 64 == {{ $k }}).map(i, variables.{{ $oexcl.var }}Ranges[i])
      .filter(b, variables.{{ $oincl.var }}Ranges.exists(a, a[0] <= b[1] && b[0] <= a[1]))
{{- end }}
- name: outboundOverlap
  expression: |-
    {{ include "meshinit.inject.ifDefaults" (list $oincl $oexcl) }}{{ range $k := until (int $chunks) }}{{ if $k }} + {{ end }}variables.outboundOverlap{{ $k }}{{ end }}
# Why the pod's settings cannot be used, as redirect.FromAnnotations says:
# every setting that cannot be read, else what Config.Validate refuses.
- name: readErrors
  expression: |-
    [
{{- range include "meshinit.mesh.annotations" . | fromJsonArray }}
{{- if not .setting }}
      {{ printf "'%s' in variables.annotations && !(variables.annotations['%s'] in %s)" .annotation .annotation (.values | toJson) }}
        ? {{ printf "invalid annotation %s " .annotation | squote }} + {{ include "meshinit.inject.quote" (printf "variables.annotations['%s']" .annotation) }} + {{ printf ": must be %s (meshinit implements no other)" (join " or " .values) | squote }} : '',
{{- end }}
{{- end }}
{{- range $settings }}
{{- if .mesh }}
      variables.{{ .meshVar }}Error == '' ? '' : {{ printf "invalid annotation %s " .mesh | squote }} + {{ include "meshinit.inject.quote" (printf "variables.%sRaw" .meshVar) }} + ': ' + variables.{{ .meshVar }}Error,
{{- if not (has .kind (list "ports" "cidrs" "ids" "names")) }}
      variables.{{ .var }}OwnSet && variables.{{ .meshVar }}Use ? {{ printf "invalid annotations %s and %s " .annotation .mesh | squote }} + {{ include "meshinit.inject.quote" (printf "variables.annotations['%s']" .annotation) }} + {{ printf ": both set %s; set one of them" .key | squote }} : '',
{{- end }}
      variables.{{ .var }}Error == '' ? '' : 'invalid ' + variables.{{ .var }}Name + ' ' + {{ include "meshinit.inject.quote" (printf "variables.%sShown" .var) }} + ': ' + variables.{{ .var }}Error,
{{- else if .annotation }}
      variables.{{ .var }}Error == '' ? '' : 'invalid ' + (variables.{{ .var }}Set ? {{ printf "annotation %s" .annotation | toJson }} : {{ printf "inject.redirect.%s" .key | toJson }})
        + ' ' + {{ include "meshinit.inject.quote" (printf "variables.%sRaw" .var) }} + ': ' + variables.{{ .var }}Error,
{{- end }}
{{- end }}
    ].filter(m, m != '')
- name: settingErrors
  expression: |-
    variables.readErrors.size() > 0 ? variables.readErrors : [
{{- range include "meshinit.inject.validateRules" . | fromJsonArray }}
      {{ . }},
{{- end }}
    ].filter(m, m != '')
# PodSecurity (webhook/podsecurity.go).
- name: podSecurityLevel
  expression: "namespaceObject.metadata.?labels[?'pod-security.kubernetes.io/enforce'].orValue('')"
- name: podSecurityConflict
  expression: {{ printf "variables.podSecurityLevel in %s" (include "meshinit.inject.conflictingLevels" .) | toJson }}
- name: podSecurityMessage
  expression: |-
    'namespace ' + namespaceObject.metadata.name + ' enforces PodSecurity "' + variables.podSecurityLevel
      + '" (label pod-security.kubernetes.io/enforce), which forbids the {{ ternary "privileged mode" "capabilities NET_ADMIN and NET_RAW" .Values.inject.privileged }} that the meshinit-redirect init container needs to redirect traffic; label the namespace pod-security.kubernetes.io/enforce=privileged to inject, or opt the pod out with label meshinit.io/inject=false'
# Injected: opted in, its settings readable, PodSecurity allowing it.
- name: inject
  expression: "variables.optedIn && variables.settingErrors.size() == 0 && !variables.podSecurityConflict"
# The container's arguments (redirect.Config.Args).
- name: args
  expression: |-
    ['apply'
{{- range $settings }}
      , {{ printf "--%s=" .key | toJson }} + variables.{{ .var }}Arg
{{- end }}
{{- range include "meshinit.inject.logFormatArgs" $ | fromJsonArray }}
      , {{ . | toJson }}
{{- end }}
    ]
{{- end -}}

{{- /*
meshinit.inject.matchConstraints: the pods the webhook's selectors could
send it: pods created outside kube-system, the release namespace and
namespaces labelled meshinit.io/injection=disabled.
*/ -}}
{{- define "meshinit.inject.matchConstraints" -}}
matchPolicy: Equivalent
namespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values: [kube-system, {{ .Release.Namespace | quote }}]
    - key: meshinit.io/injection
      operator: NotIn
      values: [disabled]
resourceRules:
  - apiGroups: [""]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [pods]
{{- end -}}

{{- /*
meshinit.inject.optIns: how a pod opts in, as selectors, JSON: the
webhook's two entries (webhook-mutatingwebhookconfiguration.yaml) and the
mutating policy's two bindings, so that neither is called for a pod it
would leave alone (a pod opts in through its namespace OR its own label,
and the API server ANDs a namespaceSelector and an objectSelector). The
namespaceSelectors do not overlap: each pod matches at most one. Each
says which pods it selects (about).
*/ -}}
{{- define "meshinit.inject.optIns" -}}
{{- $byNamespace := dict "webhook" "namespace.inject.meshinit.io" "binding" ""
    "about" "Pods in namespaces labelled meshinit.io/injection=enabled, unless the pod says meshinit.io/inject=false."
    "namespace" "- {key: meshinit.io/injection, operator: In, values: [enabled]}"
    "object" "- {key: meshinit.io/inject, operator: NotIn, values: [\"false\"]}" -}}
{{- $byPod := dict "webhook" "pod.inject.meshinit.io" "binding" "-pod"
    "about" "Pods labelled meshinit.io/inject=true in other namespaces, except those labelled meshinit.io/injection=disabled."
    "namespace" "- {key: meshinit.io/injection, operator: NotIn, values: [enabled, disabled]}"
    "object" "- {key: meshinit.io/inject, operator: In, values: [\"true\"]}" -}}
{{- list $byNamespace $byPod | toJson -}}
{{- end -}}

{{- /* meshinit.inject.quantities: a resource list as a CEL map of strings. */ -}}
{{- define "meshinit.inject.quantities" -}}
{{- $out := list -}}
{{- range $name, $q := . }}{{ $out = append $out (printf "%s: %s" ($name | toJson) (ternary ($q | toJson) ($q | toJson | toJson) (kindIs "string" $q))) }}{{ end -}}
{ {{- join ", " $out -}} }
{{- end -}}

{{- /*
meshinit.inject.container: meshinit's init container as a CEL object
(webhook/container.go's initContainer); the API server defaults it as it
defaults the webhook's (requests from limits, quantities to milli units).
Its imagePullPolicy is Always where the pod's container of that name has it
(AlwaysPullImages set it, and refuses a pod without it), as the webhook
keeps it.
*/ -}}
{{- define "meshinit.inject.container" -}}
{{- $c := "Object.spec.initContainers" -}}
{{- $sc := printf "%s.securityContext" $c -}}
{{- with .Values.inject -}}
{{ $c }}{
  name: 'meshinit-redirect',
  image: {{ include "meshinit.redirect.image" $ | toJson }},
  imagePullPolicy: variables.redirectAt.size() > 0 && variables.initContainers[variables.redirectAt[0]].?imagePullPolicy.orValue('') == 'Always' ? 'Always' : {{ .imagePullPolicy | toJson }},
  args: variables.args,
  env: {{ include "meshinit.inject.envObjects" $ }},
{{- $resources := list -}}
{{- with .resources.requests }}{{ $resources = append $resources (printf "requests: %s" (include "meshinit.inject.quantities" .)) }}{{ end -}}
{{- with .resources.limits }}{{ $resources = append $resources (printf "limits: %s" (include "meshinit.inject.quantities" .)) }}{{ end }}
  resources: {{ $c }}.resources{ {{- join ", " $resources -}} },
  securityContext: {{ $sc }}{
    capabilities: {{ $sc }}.capabilities{add: ['NET_ADMIN', 'NET_RAW'], drop: ['ALL']},
{{- if .privileged }}
    privileged: true,
    runAsUser: 0,
    runAsGroup: 0,
    runAsNonRoot: false,
    readOnlyRootFilesystem: true
{{- else }}
    runAsUser: 65532,
    runAsGroup: 0,
    runAsNonRoot: true,
    readOnlyRootFilesystem: true,
    allowPrivilegeEscalation: false,
    seccompProfile: {{ $sc }}.seccompProfile{type: 'RuntimeDefault'}
{{- end }}
  },
  volumeMounts: [{{ $c }}.volumeMounts{name: {{ include "meshinit.inject.tokenVolumeName" $ | squote }}, mountPath: {{ include "meshinit.inject.tokenPath" $ | squote }}, readOnly: true}],
  terminationMessagePath: '/dev/termination-log',
  terminationMessagePolicy: 'FallbackToLogsOnError'
}
{{- end -}}
{{- end -}}

{{- /*
meshinit.inject.logFormatArgs: the arguments after the settings of
meshinit's init container, as JSON: --log-format=json with
inject.logFormat json, none with text (the redirector's default), as
webhook/container.go's containerArgs.
*/ -}}
{{- define "meshinit.inject.logFormatArgs" -}}
{{- if eq .Values.inject.logFormat "text" -}}
[]
{{- else -}}
{{- list (printf "--log-format=%s" .Values.inject.logFormat) | toJson -}}
{{- end -}}
{{- end -}}

{{- /*
meshinit.inject.env: the environment variables of meshinit's init container,
after redirect.PodEnv, in its order: each one's name and the pod's field the
downward API sets it from (the pod's namespace, name and UID, which the
redirector adds to every line it logs), as JSON. They only label logs;
meshinit.inject.envCanonical accepts this env and nothing else.
*/ -}}
{{- define "meshinit.inject.env" -}}
[["MESHINIT_POD_NAMESPACE","metadata.namespace"],["MESHINIT_POD_NAME","metadata.name"],["MESHINIT_POD_UID","metadata.uid"]]
{{- end -}}

{{- /*
meshinit.inject.envObjects: that env, as a CEL list of the
MutatingAdmissionPolicy's patch, with the apiVersion the API server defaults
a fieldRef to (webhook/container.go's podEnv).
*/ -}}
{{- define "meshinit.inject.envObjects" -}}
{{- $e := "Object.spec.initContainers.env" -}}
{{- $items := list -}}
{{- range include "meshinit.inject.env" . | fromJsonArray -}}
{{- $items = append $items (printf "%s{name: %s, valueFrom: %s.valueFrom{fieldRef: %s.valueFrom.fieldRef{apiVersion: 'v1', fieldPath: %s}}}" $e (index . 0 | squote) $e $e (index . 1 | squote)) -}}
{{- end -}}
[{{ join ", " $items }}]
{{- end -}}

{{- /*
meshinit.inject.envCanonical: a CEL predicate: the container c (a CEL name
or expression given) has exactly that env: each variable in its order, its
value from the downward API's fieldRef to that field (apiVersion v1), no
literal value and no other source. Written not to fail on anything a pod
can hold. Argument: the CEL expression of the container.
*/ -}}
{{- define "meshinit.inject.envCanonical" -}}
{{- $c := . -}}
{{- $env := include "meshinit.inject.env" . | fromJsonArray -}}
{{- $literal := list -}}
{{- range $env }}{{ $literal = append $literal (printf "{'name': dyn(%s), 'valueFrom': dyn({'fieldRef': {'apiVersion': 'v1', 'fieldPath': %s}})}" (index . 0 | squote) (index . 1 | squote)) }}{{ end -}}
{{- /* The env exactly as the injector writes it (one comparison), else each variable checked. */ -}}
({{ $c }}.?env.orValue([]) == [{{ join ", " $literal }}]
  || {{ $c }}.?env.orValue([]).size() == {{ len $env }}
{{- range $i, $e := $env }}
  && [{{ $c }}.env[{{ $i }}]].all(e, e.name == {{ index $e 0 | squote }} && !('value' in dyn(e))
    && e.?valueFrom.?fieldRef.?fieldPath.orValue('') == {{ index $e 1 | squote }} && e.valueFrom.fieldRef.?apiVersion.orValue('') == 'v1'
    && !['configMapKeyRef', 'secretKeyRef', 'resourceFieldRef', 'fileKeyRef'].exists(f, f in dyn(e.valueFrom)))
{{- end }})
{{- end -}}

{{- /*
meshinit.inject.tokenVolumeName and meshinit.inject.tokenPath: the pod
volume (an empty emptyDir) that meshinit's container mounts read-only at the
service-account token path, so that the ServiceAccount admission plugin never
mounts an API token into it (webhook.TokenBlockVolume says why).
*/ -}}
{{- define "meshinit.inject.tokenVolumeName" -}}meshinit-no-api-token{{- end -}}
{{- define "meshinit.inject.tokenPath" -}}/var/run/secrets/kubernetes.io/serviceaccount{{- end -}}

{{- /*
meshinit.inject.tokenVolume: that volume, as a CEL object of the
MutatingAdmissionPolicy's patch.
*/ -}}
{{- define "meshinit.inject.tokenVolume" -}}
Object.spec.volumes{name: {{ include "meshinit.inject.tokenVolumeName" . | squote }}, emptyDir: Object.spec.volumes.emptyDir{}}
{{- end -}}

{{- /*
meshinit.inject.canonical: a CEL predicate: the init container c (a CEL
name bound by the caller) is exactly the one the injector builds with the
arguments args (a CEL list expression), as webhook/mutate.go's
sameContainer decides: imagePullPolicy Always and requests or limits of
resources the chart does not name are tolerated (admission plugins set them,
AlwaysPullImages and LimitRanger; neither changes what the redirector runs
or may do); the chart's resources are compared as quantities. Written not to
fail on anything a pod can hold. Argument: (dict "c" <name> "args" <CEL>
"root" $).
*/ -}}
{{- define "meshinit.inject.canonical" -}}
{{- $c := .c -}}
{{- $volume := include "meshinit.inject.tokenVolumeName" .root -}}
{{- with .root.Values.inject -}}
{{ $c }}.name == 'meshinit-redirect'
  && {{ $c }}.?image.orValue('') == {{ include "meshinit.redirect.image" $.root | squote }}
  && {{ $c }}.?imagePullPolicy.orValue('') in [{{ .imagePullPolicy | squote }}, 'Always']
  && {{ $c }}.?args.orValue([]) == {{ $.args }}
{{- range $kind := list "requests" "limits" }}
{{- range $name, $q := index $.root.Values.inject.resources $kind }}
{{- $v := printf "%s.resources.%s[%s]" $c $kind ($name | squote) }}
  && {{ $c }}.?resources.?{{ $kind }}[?{{ $name | squote }}].hasValue() && isQuantity(string({{ $v }})) && quantity(string({{ $v }})).compareTo(quantity({{ $q | toString | squote }})) == 0
{{- end }}
{{- end }}
  && {{ $c }}.?terminationMessagePath.orValue('') == '/dev/termination-log'
  && {{ $c }}.?terminationMessagePolicy.orValue('') == 'FallbackToLogsOnError'
  && {{ include "meshinit.inject.envCanonical" $c | replace "\n" "\n  " }}
  && !['command', 'workingDir', 'ports', 'envFrom', 'resizePolicy', 'restartPolicy', 'restartPolicyRules',
    'volumeDevices', 'livenessProbe', 'readinessProbe', 'startupProbe', 'lifecycle', 'stdin', 'stdinOnce', 'tty'].exists(f, f in dyn({{ $c }}))
  && {{ $c }}.?volumeMounts.orValue([]).size() == 1
  && [{{ $c }}.volumeMounts[0]].all(m, m.name == '{{ $volume }}' && m.mountPath == {{ include "meshinit.inject.tokenPath" $.root | squote }}
    && m.?readOnly.orValue(false) && !['subPath', 'subPathExpr', 'mountPropagation', 'recursiveReadOnly'].exists(f, f in dyn(m)))
  && {{ $c }}.?securityContext.hasValue() && [{{ $c }}.securityContext].all(s,
    !['seLinuxOptions', 'windowsOptions', 'procMount', 'appArmorProfile'{{ if not .privileged }}, 'privileged'{{ end }}].exists(f, f in dyn(s))
    && s.?capabilities.?add.orValue([]) == ['NET_ADMIN', 'NET_RAW'] && s.?capabilities.?drop.orValue([]) == ['ALL']
{{- if .privileged }}
    && s.?privileged.orValue(false) && s.?runAsUser.orValue(-1) == 0 && s.?runAsGroup.orValue(-1) == 0
    && s.?runAsNonRoot.hasValue() && !s.runAsNonRoot && s.?readOnlyRootFilesystem.orValue(false)
    && !s.?allowPrivilegeEscalation.hasValue() && !s.?seccompProfile.hasValue())
{{- else }}
    && s.?runAsUser.orValue(-1) == 65532 && s.?runAsGroup.orValue(-1) == 0 && s.?runAsNonRoot.orValue(false)
    && s.?readOnlyRootFilesystem.orValue(false) && s.?allowPrivilegeEscalation.hasValue() && !s.allowPrivilegeEscalation
    && s.?seccompProfile.?type.orValue('') == 'RuntimeDefault' && !s.?seccompProfile.?localhostProfile.hasValue())
{{- end }}
{{- end -}}
{{- end -}}

{{- /*
meshinit.inject.tokenVolumeCanonical: a CEL predicate: the volume v (a CEL
name bound by the caller) is the one the injector adds.
*/ -}}
{{- define "meshinit.inject.tokenVolumeCanonical" -}}
{{ . }}.name == {{ include "meshinit.inject.tokenVolumeName" . | squote }} && {{ . }}.?emptyDir.hasValue() && !{{ . }}.emptyDir.?medium.hasValue() && !{{ . }}.emptyDir.?sizeLimit.hasValue()
{{- end -}}

{{- /*
meshinit.inject.unsettled: a CEL match condition, true unless the pod
already carries exactly what the injector would give it (its container at
its placement, the volume, the status), so that the injector (webhook or
mutating policy) is not called again for a pod it has injected: on
reinvocation, after a later webhook or an admission plugin changed
something else, and for a pod re-created from an injected one. Without
traffic annotations a pod's container is the chart's literal; a pod with
them is always reviewed (its arguments would have to be computed from
them, which is the review itself).
*/ -}}
{{- define "meshinit.inject.unsettled" -}}
{{- $args := list "apply" -}}
{{- range include "meshinit.redirect.settings" . | fromJsonArray }}{{ $args = append $args (printf "--%s=%s" (index . 0) (index . 1)) }}{{ end -}}
{{- $args = concat $args (include "meshinit.inject.logFormatArgs" . | fromJsonArray) -}}
{{- $at := ternary "0" "object.spec.initContainers.size() - 1" (eq (include "meshinit.placement" .) "first") -}}
!(object.spec.?initContainers.orValue([]).size() > 0
  && !object.metadata.?annotations.orValue({}).exists(k, k.startsWith('traffic.meshinit.io/')
    {{- range include "meshinit.mesh.annotations" . | fromJsonArray }} || k == {{ .annotation | squote }}{{ end }})
  && object.metadata.?annotations[?'meshinit.io/status'].orValue('') == {{ include "meshinit.inject.status" . | squote }}
  && object.spec.?volumes.orValue([]).exists(v, {{ include "meshinit.inject.tokenVolumeCanonical" "v" }})
  && [object.spec.initContainers[{{ $at }}]].all(c, {{ include "meshinit.inject.canonical" (dict "c" "c" "args" ($args | toJson) "root" .) }}))
{{- end -}}

{{- /*
meshinit.inject.meshVariables: for a setting the mesh preset reads from the
mesh's annotation too (an entry of meshinit.inject.settings with mesh), the
variables redirect.FromPodAnnotations reads it with, in place of Set and
Raw (its variables <meshVar>* read the mesh's annotation alone; <meshVar>Use
when it is set and can be read):
  <var>OwnSet  meshinit's own annotation is set
  <var>Set     either is used
  <var>Raw     the value: exclude lists add the mesh's to meshinit's (or the
               chart's); include lists take the mesh's, both when both are
               set ("*" when either is); ports and IDs the mesh's unless
               meshinit's is set (both set is refused in readErrors)
  <var>Name, <var>Shown  how messages name the value, and what they quote
*/ -}}
{{- define "meshinit.inject.meshVariables" -}}
{{- $own := printf "variables.annotations[?'%s'].orValue(%s)" .annotation (.value | toJson) -}}
{{- $ownSet := printf "variables.%sOwnSet" .var -}}
{{- $use := printf "variables.%sUse" .meshVar -}}
{{- $m := printf "variables.%sRaw" .meshVar -}}
{{- $ownName := ternary (printf "annotation %s" .annotation) (printf "inject.redirect.%s" .key) true -}}
{{- $both := printf "annotations %s and %s" .annotation .mesh -}}
{{- $list := has .kind (list "ports" "cidrs" "ids" "names") }}
- name: {{ .var }}OwnSet
  expression: {{ printf "'%s' in variables.annotations" .annotation | toJson }}
- name: {{ .var }}Set
  expression: {{ printf "%s || %s" $ownSet $use | toJson }}
- name: {{ .var }}Own
  expression: {{ $own | toJson }}
- name: {{ .var }}Raw
  expression: |-
{{- if and $list (hasPrefix "exclude-" .key) }}
    !{{ $use }} ? variables.{{ .var }}Own : variables.{{ .var }}Own == '' ? {{ $m }} : {{ $m }} == '' ? variables.{{ .var }}Own : variables.{{ .var }}Own + ',' + {{ $m }}
{{- else if $list }}
    !{{ $use }} ? variables.{{ .var }}Own : !{{ $ownSet }} ? {{ $m }}
      : variables.{{ .var }}Own.trim() == '*' || {{ $m }}.trim() == '*' ? '*'
      : variables.{{ .var }}Own == '' ? {{ $m }} : {{ $m }} == '' ? variables.{{ .var }}Own : variables.{{ .var }}Own + ',' + {{ $m }}
{{- else }}
    !{{ $use }} || {{ $ownSet }} ? variables.{{ .var }}Own : {{ $m }}
{{- end }}
- name: {{ .var }}Name
  expression: |-
{{- if $list }}
    {{ $use }} ? ({{ $ownSet }} ? {{ $both | squote }} : {{ printf "annotation %s" .mesh | squote }}) : {{ $ownSet }} ? {{ $ownName | squote }} : {{ printf "inject.redirect.%s" .key | squote }}
{{- else }}
    {{ $use }} && !{{ $ownSet }} ? {{ printf "annotation %s" .mesh | squote }} : {{ $ownSet }} ? {{ $ownName | squote }} : {{ printf "inject.redirect.%s" .key | squote }}
{{- end }}
- name: {{ .var }}Shown
  expression: |-
{{- if and $list (hasPrefix "exclude-" .key) }}
    {{ $use }} && !{{ $ownSet }} ? {{ $m }} : variables.{{ .var }}Raw
{{- else }}
    variables.{{ .var }}Raw
{{- end }}
{{- end -}}

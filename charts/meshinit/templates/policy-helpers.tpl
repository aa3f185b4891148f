{{- /*
CEL snippets of the ValidatingAdmissionPolicy (policy-validatingadmissionpolicy.yaml).
They are Helm templates only so that each piece of logic is written once; this
file renders to nothing.
*/ -}}

{{- /* The policy's name; the bindings add -cluster and -namespace. */ -}}
{{- define "meshinit.policy.name" -}}
{{ include "meshinit.fullname" . }}-redirectpolicy
{{- end -}}

{{- /*
meshinit.policy.podOf: the pod a matched object stands for, given the name of
the CEL variable holding it ("object" or "oldObject"): a Pod itself, a CronJob's
spec.jobTemplate.spec.template, any other workload's spec.template. dyn() lets
one expression serve the seven matched kinds, whose types differ.
*/ -}}
{{- define "meshinit.policy.podOf" -}}
({{ . }}.kind == 'Pod' ? dyn({{ . }}) : {{ . }}.kind == 'CronJob' ? dyn({{ . }}).spec.jobTemplate.spec.template : dyn({{ . }}).spec.template)
{{- end -}}

{{- /*
meshinit.policy.optInMatchResources: the matchResources of a binding of the
RedirectPolicy's policy, and of the trust policy bound wherever it is,
given whether it is for pods and workloads labelled meshinit.io/inject=true
outside the namespaces that opt in (true), or for those namespaces (false).
*/ -}}
{{- define "meshinit.policy.optInMatchResources" -}}
namespaceSelector:
  matchExpressions:
  {{- if . }}
    - {key: meshinit.io/injection, operator: NotIn, values: [enabled, disabled]}
objectSelector:
  matchExpressions:
    - {key: meshinit.io/inject, operator: In, values: ["true"]}
  {{- else }}
    - {key: meshinit.io/injection, operator: In, values: [enabled]}
  {{- end }}
{{- end -}}

{{- /*
meshinit.policy.whatRunsChanged: a CEL condition on an UPDATE, true when it
changes what runs: for a pod, any of its containers (init, app,
ephemeral) or what the CEL condition given (may be "") adds; for a
workload, its pod template.
*/ -}}
{{- define "meshinit.policy.whatRunsChanged" -}}
(object.kind == 'Pod'
  ? object.spec.?initContainers.orValue([]) != oldObject.spec.?initContainers.orValue([])
    || object.spec.?containers.orValue([]) != oldObject.spec.?containers.orValue([])
    || object.spec.?ephemeralContainers.orValue([]) != oldObject.spec.?ephemeralContainers.orValue([])
    {{- with . }}
    || {{ . }}
    {{- end }}
  : {{ include "meshinit.policy.podOf" "object" }} != {{ include "meshinit.policy.podOf" "oldObject" }})
{{- end -}}

{{- /*
meshinit.policy.lists: the list settings a pod sets, by annotation
traffic.meshinit.io/<key> and, once injected, in meshinit's init container
as --<key>=<value>. name prefixes the policy's variables for the
annotation (the argument's are prefixed "arg"); kind is ports, cidrs, ids
or names; include lists capture what they list, exclude lists let it
bypass the proxy; required names the variable of the ports the
RedirectPolicy requires in that direction. ids and names lists are
checked against the RedirectPolicy's allowed (the variable holding
spec.<spec>) wherever it requires ports in their direction or
interception; what names their entries in messages.
*/ -}}
{{- define "meshinit.policy.lists" -}}
[{"key": "include-inbound-ports", "name": "includeInbound", "kind": "ports", "include": true, "required": "requiredInbound", "direction": "inbound"},
 {"key": "exclude-inbound-ports", "name": "excludeInbound", "kind": "ports", "include": false, "required": "requiredInbound", "direction": "inbound"},
 {"key": "include-outbound-ports", "name": "includeOutbound", "kind": "ports", "include": true, "required": "requiredOutbound", "direction": "outbound"},
 {"key": "exclude-outbound-ports", "name": "excludeOutbound", "kind": "ports", "include": false, "required": "requiredOutbound", "direction": "outbound"},
 {"key": "include-outbound-cidrs", "name": "includeCIDRs", "kind": "cidrs", "include": true, "required": "requiredOutbound", "direction": "outbound"},
 {"key": "exclude-outbound-cidrs", "name": "excludeCIDRs", "kind": "cidrs", "include": false, "required": "requiredOutbound", "direction": "outbound"},
 {"key": "exclude-outbound-uids", "name": "excludeUIDs", "kind": "ids", "include": false, "required": "requiredOutbound", "direction": "outbound",
  "allowed": "allowedUIDs", "spec": "allowedOutboundUIDExclusions", "what": "UID"},
 {"key": "exclude-outbound-gids", "name": "excludeGIDs", "kind": "ids", "include": false, "required": "requiredOutbound", "direction": "outbound",
  "allowed": "allowedGIDs", "spec": "allowedOutboundGIDExclusions", "what": "GID"},
 {"key": "exclude-inbound-interfaces", "name": "excludeInterfaces", "kind": "names", "include": false, "required": "requiredInbound", "direction": "inbound",
  "allowed": "allowedInterfaces", "spec": "allowedInboundInterfaceExclusions", "what": "interface"}]
{{- end -}}

{{- /*
meshinit.policy.listSources: each list of meshinit.policy.lists from each
place the policy reads it, annotations first, as JSON: the list's fields
plus name (the variables' prefix), field (for messages), raw (the CEL
expression of the string holding the value: the annotation, or the init
container's argument at its position; the setting's default,
redirect.Defaults, when there is none) and skip (the length of the
argument's "--<key>=" before the value).
*/ -}}
{{- define "meshinit.policy.listSources" -}}
{{- $defaults := dict -}}
{{- range splitList "\n" (include "meshinit.redirect.defaults" .) -}}
{{- $kv := splitn "=" 2 . -}}
{{- $_ := set $defaults $kv._0 $kv._1 -}}
{{- end -}}
{{- $args := include "meshinit.policy.chartArgs" . | fromJsonArray -}}
{{- $out := list -}}
{{- $lists := include "meshinit.policy.lists" . | fromJsonArray -}}
{{- range $l := $lists -}}
{{- $annotation := printf "traffic.meshinit.io/%s" $l.key -}}
{{- $raw := printf "variables.annotations[?'%s'].orValue('%s')" $annotation (get $defaults $l.key) -}}
{{- $out = append $out (merge (dict "name" $l.name "field" $annotation "raw" $raw "skip" 0) $l) -}}
{{- end -}}
{{- /* The mesh preset's annotation read as the list, on its own (redirect.FromPodAnnotations adds exclusions up). */ -}}
{{- range $l := $lists -}}
{{- with include "meshinit.mesh.annotationOf" (dict "key" $l.key "root" $) -}}
{{- $raw := printf "variables.annotations[?'%s'].orValue('%s')" . (get $defaults $l.key) -}}
{{- $out = append $out (merge (dict "name" (printf "mesh%s" (title $l.name)) "field" . "raw" $raw "skip" 0) $l) -}}
{{- end -}}
{{- end -}}
{{- range $l := $lists -}}
{{- $prefix := printf "--%s=" $l.key -}}
{{- $i := 0 -}}
{{- range $j, $a := $args }}{{ if eq $a $prefix }}{{ $i = $j }}{{ end }}{{ end -}}
{{- $raw := printf "variables.injected ? variables.meshinitArgs[%d] : '%s%s'" $i $prefix (get $defaults $l.key) -}}
{{- $out = append $out (merge (dict "name" (printf "arg%s" (title $l.name)) "field" (printf "meshinit-redirect argument %s" (trimSuffix "=" $prefix)) "raw" $raw "skip" (len $prefix)) $l) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{- /*
meshinit.policy.chartArgs: the arguments of meshinit's init container as the
chart configures the webhook to write them (redirect.Config.Args after
"apply"), as JSON. For the settings a pod sets (meshinit.redirect.podSettings),
only "--<key>=": their values are checked against the RedirectPolicy instead.
*/ -}}
{{- define "meshinit.policy.chartArgs" -}}
{{- include "meshinit.policy.args" (dict "root" . "podSettings" false) -}}
{{- end -}}

{{- /*
meshinit.policy.defaultArgs: the arguments the injector writes for a pod
that sets none of meshinit.redirect.podSettings: meshinit.policy.chartArgs
with the chart's value after each "--<key>=", as JSON.
*/ -}}
{{- define "meshinit.policy.defaultArgs" -}}
{{- include "meshinit.policy.args" (dict "root" . "podSettings" true) -}}
{{- end -}}

{{- /*
meshinit.policy.args: chartArgs (podSettings false: "--<key>=" for each
setting a pod sets) or defaultArgs (podSettings true: the chart's values).
Argument: (dict "root" $ "podSettings" bool).
*/ -}}
{{- define "meshinit.policy.args" -}}
{{- $keys := list -}}
{{- if not .podSettings -}}
{{- range include "meshinit.redirect.podSettings" .root | splitList "\n" }}{{ $keys = append $keys (first (splitList " " .)) }}{{ end -}}
{{- end -}}
{{- $args := list "apply" -}}
{{- range include "meshinit.redirect.settings" .root | fromJsonArray -}}
{{- $args = append $args (printf "--%s=%s" (index . 0) (ternary "" (index . 1) (has (index . 0) $keys))) -}}
{{- end -}}
{{- $args = concat $args (include "meshinit.inject.logFormatArgs" .root | fromJsonArray) -}}
{{- toJson $args -}}
{{- end -}}

{{- /*
meshinit.policy.settingAnnotations: the annotations that set one of
meshinit.redirect.podSettings, as JSON: traffic.meshinit.io/<key> for each,
then the mesh preset's read as one.
*/ -}}
{{- define "meshinit.policy.settingAnnotations" -}}
{{- $out := list -}}
{{- range include "meshinit.redirect.podSettings" . | splitList "\n" }}{{ $out = append $out (printf "traffic.meshinit.io/%s" (first (splitList " " .))) }}{{ end -}}
{{- range include "meshinit.mesh.annotations" . | fromJsonArray }}{{ if .setting }}{{ $out = append $out .annotation }}{{ end }}{{ end -}}
{{- toJson $out -}}
{{- end -}}

{{- /*
meshinit.policy.listsAsDefaults: "true" when every list a pod sets is, in
the chart and in redirect.Defaults, the value that takes nothing around
the proxy: "*" for an include list, empty for an exclude list. Then a pod
that sets no list (variables.settingsAsChart) has no list that cannot be
read or that a RedirectPolicy forbids, whatever the RedirectPolicy.
*/ -}}
{{- define "meshinit.policy.listsAsDefaults" -}}
{{- $ok := true -}}
{{- $defaults := dict -}}
{{- range splitList "\n" (include "meshinit.redirect.defaults" .) -}}
{{- $kv := splitn "=" 2 . -}}
{{- $_ := set $defaults $kv._0 $kv._1 -}}
{{- end -}}
{{- range include "meshinit.policy.lists" . | fromJsonArray -}}
{{- $want := ternary "*" "" .include -}}
{{- if or (ne (include "meshinit.redirect.setting" (dict "key" .key "root" $)) $want) (ne (get $defaults .key) $want) }}{{ $ok = false }}{{ end -}}
{{- end -}}
{{- $ok -}}
{{- end -}}

{{- /*
meshinit.policy.podArgs: the positions in meshinit.policy.chartArgs of the
settings a pod sets, as JSON.
*/ -}}
{{- define "meshinit.policy.podArgs" -}}
{{- $keys := list -}}
{{- range include "meshinit.redirect.podSettings" . | splitList "\n" }}{{ $keys = append $keys (printf "--%s=" (first (splitList " " .))) }}{{ end -}}
{{- $out := list -}}
{{- range $i, $a := include "meshinit.policy.chartArgs" . | fromJsonArray }}{{ if has $a $keys }}{{ $out = append $out $i }}{{ end }}{{ end -}}
{{- toJson $out -}}
{{- end -}}

{{- /*
meshinit.policy.proxyContainers: the containers trusted to run as the proxy
UID or GID, as JSON [[name, image], ...]: policy.proxyContainers, and the
helm test's proxy when tests are enabled.
*/ -}}
{{- define "meshinit.policy.proxyContainers" -}}
{{- $out := list -}}
{{- range include "meshinit.policy.proxyContainerEntries" . | fromJsonArray }}{{ $out = append $out (list .name .image) }}{{ end -}}
{{- if .Values.tests.enabled -}}
{{- $out = append $out (list "proxy" (include "meshinit.image" (dict "image" .Values.tests.image.proxy "root" .))) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{- /*
meshinit.policy.redirectVariables: the variables that recognise meshinit's
init container by what it runs, not by its name: no command, exactly the
chart's arguments (the lists a pod sets are only
prefixes here: the RedirectPolicy's policy checks their values), its one
mount (the empty directory at the service-account token path), nothing
that changes what the redirector finds or when it runs; with placement
first, first. variables.redirect is the init container named
meshinit-redirect ({} when there is none), variables.redirectProblem why it
is not meshinit's ('' when it is), variables.injected whether the pod has
meshinit's. Needs variables.pod. Shared by the RedirectPolicy's policy and
the PodSecurity guard (podsecurity-validatingadmissionpolicy.yaml), so both
recognise the same container. Its image is not among them: a second policy
(trust-redirector.yaml), bound wherever these two are, refuses an image that
is not one the release trusts, which during an upgrade or a rollback is
either version's.
*/ -}}
{{- define "meshinit.policy.redirectVariables" -}}
# What the chart configures the injector to inject (inject).
- name: chartArgs
  expression: |-
    {{ include "meshinit.policy.chartArgs" . }}
- name: podArgs
  expression: |-
    {{ include "meshinit.policy.podArgs" . }}
- name: argIndexes
  expression: |-
    {{ until (include "meshinit.policy.chartArgs" . | fromJsonArray | len) | toJson }}
- name: redirectFirst
  expression: {{ eq (include "meshinit.placement" .) "first" | quote }}
- name: initContainers
  expression: "variables.pod.spec.?initContainers.orValue([])"
- name: redirectContainers
  expression: "variables.initContainers.filter(c, c.name == 'meshinit-redirect')"
- name: redirect
  expression: "variables.redirectContainers.size() == 0 ? {} : variables.redirectContainers[0]"
- name: redirectArgs
  expression: "variables.redirect.?args.orValue([])"
- name: redirectFields
  expression: |-
    ['envFrom', 'volumeDevices', 'workingDir', 'restartPolicy',
      'lifecycle', 'livenessProbe', 'readinessProbe', 'startupProbe'].filter(f, f in variables.redirect)
# Its env: the pod's namespace, name and UID from the downward API, which
# the redirector logs, and nothing else (meshinit.inject.env).
- name: redirectEnvCanonical
  expression: |-
    {{- include "meshinit.inject.envCanonical" "variables.redirect" | nindent 4 }}
# Its one mount: the empty directory it holds at the service-account
# token path, so the API server never mounts a token into it.
- name: redirectMounts
  expression: "variables.redirect.?volumeMounts.orValue([])"
- name: redirectMountsCanonical
  expression: |-
    (variables.redirectMounts == [{'name': dyn({{ include "meshinit.inject.tokenVolumeName" . | squote }}), 'mountPath': dyn({{ include "meshinit.inject.tokenPath" . | squote }}), 'readOnly': dyn(true)}]
      || variables.redirectMounts.size() == 1
      && variables.redirectMounts[0].name == {{ include "meshinit.inject.tokenVolumeName" . | squote }}
      && variables.redirectMounts[0].mountPath == {{ include "meshinit.inject.tokenPath" . | squote }}
      && variables.redirectMounts[0].?readOnly.orValue(false)
      && !['subPath', 'subPathExpr', 'mountPropagation', 'recursiveReadOnly'].exists(f, f in variables.redirectMounts[0]))
      && variables.pod.spec.?volumes.orValue([]).exists(v, v.name == {{ include "meshinit.inject.tokenVolumeName" . | squote }}
        && v.?emptyDir.hasValue() && !v.emptyDir.?medium.hasValue() && !v.emptyDir.?sizeLimit.hasValue())
# The arguments the injector writes for a pod that sets no setting; a
# container that has them has none that differ from the chart's.
- name: defaultArgs
  expression: |-
    {{ include "meshinit.policy.defaultArgs" . }}
- name: argsAsDefaults
  expression: "variables.redirectArgs == variables.defaultArgs"
# The positions of the arguments that differ from the chart's (only
# read when there are as many as the chart's).
- name: badArgs
  expression: |-
    variables.argsAsDefaults ? [] : variables.argIndexes.filter(i, i in variables.podArgs
      ? !variables.redirectArgs[i].startsWith(variables.chartArgs[i]) : variables.redirectArgs[i] != variables.chartArgs[i])
# Why the init container named meshinit-redirect is not meshinit's; '' when it is.
- name: redirectProblem
  expression: |-
    variables.redirect.?command.orValue([]).size() > 0 ? 'it sets command'
    : variables.redirectFields.size() > 0 ? 'it sets ' + variables.redirectFields[0]
    : !variables.redirectEnvCanonical ? {{ include "meshinit.policy.envProblem" . | toJson }}
    : !variables.redirectMountsCanonical
      ? {{ printf "'it mounts something other than, or besides, the empty directory %s read-only at %s'" (include "meshinit.inject.tokenVolumeName" .) (include "meshinit.inject.tokenPath" .) }}
    : variables.redirectArgs.size() != variables.chartArgs.size()
      ? 'it has ' + string(variables.redirectArgs.size()) + ' arguments, not ' + string(variables.chartArgs.size())
    : variables.badArgs.size() > 0
      ? 'argument ' + string(variables.badArgs[0]) + ' ' + {{ include "meshinit.policy.quoted" "variables.redirectArgs[variables.badArgs[0]]" }} + ' is not '
        + strings.quote(variables.chartArgs[variables.badArgs[0]] + (variables.badArgs[0] in variables.podArgs ? '...' : ''))
    : variables.redirectFirst && variables.initContainers[0].name != 'meshinit-redirect'
      ? 'it is not the first init container (inject.placement: first)'
    : ''
- name: injected
  expression: "variables.redirectContainers.size() > 0 && variables.redirectProblem == ''"
{{- end -}}

{{- /*
meshinit.policy.envProblem: the RedirectPolicy's reason for a meshinit-redirect
whose env is not meshinit.inject.env exactly.
*/ -}}
{{- define "meshinit.policy.envProblem" -}}
{{- $names := list -}}{{- $fields := list -}}
{{- range include "meshinit.inject.env" . | fromJsonArray }}{{ $names = append $names (index . 0) }}{{ $fields = append $fields (index . 1) }}{{ end -}}
its env is not exactly {{ join ", " $names }} from fieldRef {{ join ", " $fields }}
{{- end -}}

{{- /* meshinit.policy.cut: the string expression s, cut after n characters (then "..."). */ -}}
{{- define "meshinit.policy.cut" -}}
({{ .s }}.size() > {{ .n }} ? {{ .s }}.substring(0, {{ .n }}) + '...' : {{ .s }})
{{- end -}}

{{- /* meshinit.policy.quoted: the string expression given, cut after 64 characters, quoted. */ -}}
{{- define "meshinit.policy.quoted" -}}
strings.quote({{ include "meshinit.policy.cut" (dict "s" . "n" 64) }})
{{- end -}}

{{- /*
meshinit.policy.listVariables: variables that read one list value (a source
of meshinit.policy.listSources) exactly as redirect.ParsePortList or
redirect.ParseCIDRList does, after refusing a value too long to parse.
  <name>Raw      the string holding the value (after skip characters)
  <name>TooLong  more than variables.maxListBytes bytes or
                 variables.maxListEntries entries (commas + 1): not read.
                 A string's size() (its characters, no more than its bytes)
                 and charAt() cost next to nothing, unlike bytes(), split()
                 or substring(), which are charged by the length of the
                 string: a huge value is refused, and quoted in the
                 message, at that cost.
  <name>Value    the value, '' when too long
  <name>All      the value is "*" (surrounding whitespace ignored)
  <name>Entries  otherwise each comma-separated entry, trimmed, empty ones
                 dropped (ports: as [entry, first, last], bounds trimmed,
                 last only for a range)
  <name>Bad      the entries that do not parse ("*" inside a list is one)
  <name>Readable neither too long nor with a bad entry
Ports:
  <name>Ranges   the entries as [first, last] integers, when none is bad
  <name>Ports, <name>Spans  the single ports and the true ranges among them
                 (list membership costs far less than a comprehension)
CIDRs:
  <name>Prefixes the entries as CIDRs, when none is bad: a bare address is
                 one host (/32, /128), a prefix is masked
Whitespace is what Go's strings.TrimSpace removes (CEL's trim() is that
function). Port numbers may have leading zeros, not signs, as for
strconv.ParseUint. Addresses and prefixes are read by Kubernetes' ip() and
cidr(), which use net/netip as Go does, but refuse IPv4-mapped IPv6
addresses (::ffff:10.0.0.1), which Go reads: the policy refuses them.
*/ -}}
{{- define "meshinit.policy.listVariables" -}}
- name: {{ .name }}Raw
  expression: {{ .raw | quote }}
- name: {{ .name }}TooLong
  expression: |-
    variables.{{ .name }}Raw.size() - {{ .skip }} > variables.maxListBytes
      || bytes(variables.{{ .name }}Raw).size() - {{ .skip }} > variables.maxListBytes
      || variables.{{ .name }}Raw.split(',', variables.maxListEntries + 1).size() > variables.maxListEntries
- name: {{ .name }}Value
  expression: "variables.{{ .name }}TooLong ? '' : variables.{{ .name }}Raw{{ if .skip }}.substring({{ .skip }}){{ end }}"
- name: {{ .name }}All
  expression: "!variables.{{ .name }}TooLong && variables.{{ .name }}Value.trim() == '*'"
{{- if eq .kind "ports" }}
- name: {{ .name }}Entries
  expression: |-
    (variables.{{ .name }}TooLong || variables.{{ .name }}All ? [] : variables.{{ .name }}Value.split(','))
      .map(e, e.trim()).filter(e, e != '')
      .map(e, [e] + e.split('-').map(b, b.trim()))
- name: {{ .name }}Bad
  expression: |-
    variables.{{ .name }}Entries.filter(e, !(e.size() <= 3
      && {{ include "meshinit.policy.isPort" "e[1]" }}
      && {{ include "meshinit.policy.isPort" "e[e.size() - 1]" }}
      && int(e[1]) <= int(e[e.size() - 1]))).map(e, e[0])
- name: {{ .name }}Readable
  expression: "!variables.{{ .name }}TooLong && variables.{{ .name }}Bad.size() == 0"
- name: {{ .name }}Ranges
  expression: |-
    !variables.{{ .name }}Readable ? [] :
      variables.{{ .name }}Entries.map(e, [int(e[1]), int(e[e.size() - 1])])
- name: {{ .name }}Ports
  expression: "variables.{{ .name }}Ranges.filter(r, r[0] == r[1]).map(r, r[0])"
- name: {{ .name }}Spans
  expression: "variables.{{ .name }}Ranges.filter(r, r[0] != r[1])"
{{- else if or (eq .kind "ids") (eq .kind "names") }}
- name: {{ .name }}Entries
  expression: |-
    (variables.{{ .name }}TooLong ? [] : variables.{{ .name }}Value.split(','))
      .map(e, e.trim()).filter(e, e != '')
- name: {{ .name }}Bad
{{- if eq .kind "ids" }}
  expression: "variables.{{ .name }}Entries.filter(e, !{{ include "meshinit.policy.isID" "e" }})"
{{- else }}
  expression: "variables.{{ .name }}Entries.filter(e, !e.matches('^[A-Za-z0-9_][A-Za-z0-9_.-]{0,14}$'))"
{{- end }}
- name: {{ .name }}Readable
  expression: "!variables.{{ .name }}TooLong && variables.{{ .name }}Bad.size() == 0"
- name: {{ .name }}Checked
  expression: "variables.{{ .direction }}Required"
- name: {{ .name }}Items
{{- if eq .kind "ids" }}
  expression: "!variables.{{ .name }}Readable ? [] : variables.{{ .name }}Entries.map(e, int(e))"
{{- else }}
  expression: "!variables.{{ .name }}Readable ? [] : variables.{{ .name }}Entries"
{{- end }}
{{- else }}
- name: {{ .name }}Entries
  expression: |-
    (variables.{{ .name }}TooLong || variables.{{ .name }}All ? [] : variables.{{ .name }}Value.split(','))
      .map(e, e.trim()).filter(e, e != '')
- name: {{ .name }}Bad
  expression: "variables.{{ .name }}Entries.filter(e, !(e.contains('/') ? isCIDR(e) : isIP(e)))"
- name: {{ .name }}Readable
  expression: "!variables.{{ .name }}TooLong && variables.{{ .name }}Bad.size() == 0"
- name: {{ .name }}Prefixes
  expression: |-
    !variables.{{ .name }}Readable ? [] : variables.{{ .name }}Entries.map(e,
      e.contains('/') ? cidr(e).masked() : cidr(e + (ip(e).family() == 4 ? '/32' : '/128')))
{{- end }}
{{- end -}}

{{- /*
meshinit.policy.isID: the string expression given is a decimal UID or GID
0-4294967294, leading zeros allowed (as strconv.ParseUint reads it).
*/ -}}
{{- define "meshinit.policy.isID" -}}
({{ . }}.matches('^0*[0-9]{1,10}$') && int({{ . }}) <= 4294967294)
{{- end -}}

{{- /* meshinit.policy.isPort: the string expression given is a decimal port 1-65535. */ -}}
{{- define "meshinit.policy.isPort" -}}
({{ . }}.matches('^0*[0-9]{1,5}$') && int({{ . }}) >= 1 && int({{ . }}) <= 65535)
{{- end -}}

{{- /*
meshinit.policy.inList: the port-list variables named by list (a prefix given
to listVariables) contain the port held by the CEL variable port.
*/ -}}
{{- define "meshinit.policy.inList" -}}
(variables.{{ .list }}All || {{ .port }} in variables.{{ .list }}Ports
  || variables.{{ .list }}Spans.exists(r, r[0] <= {{ .port }} && {{ .port }} <= r[1]))
{{- end -}}

{{- /*
meshinit.policy.violations: the variable <name>Violations of one list source
(see listVariables): what the list, once read, takes around the proxy that
the RedirectPolicy requires. Ports: the required ports an include list
leaves out or an exclude list lists (as strings); where every port is
required (interception Required), an include list other than "*" (as
["*"]) and every entry of an exclude list but, inbound, those inside the
chart's ignored-inbound-ports (the proxy's own ports, never captured anyway:
a mesh's injector may write them into its exclusion annotation, as Istio's
writes 15020 into traffic.sidecar.istio.io/excludeInboundPorts). CIDRs: for an exclude list, its
prefixes outside every allowedOutboundCIDRExclusions entry ("*" when it is
"*" and they do not cover everything); for an include list (it leaves out
whatever it does not list), the families (IPv4, IPv6) it narrows that
allowedOutboundCIDRExclusions does not cover whole; only when the
RedirectPolicy requires outbound ports (interception Required: all). Empty while the list cannot be read
(another validation says so).
*/ -}}
{{- define "meshinit.policy.violations" -}}
- name: {{ .name }}Violations
{{- if or (eq .kind "ids") (eq .kind "names") }}
  expression: |-
    !variables.{{ .name }}Checked ? [] : variables.{{ .name }}Items.filter(e, !(e in variables.{{ .allowed }}))
{{- else if eq .kind "ports" }}
  expression: |-
    !variables.{{ .name }}Readable ? [] : variables.allPorts
      ? {{ if .include }}(variables.{{ .name }}All ? [] : ['*']){{ else }}(variables.{{ .name }}All ? ['*'] : variables.{{ .name }}Entries
        {{- if eq .direction "inbound" }}.filter(e, !variables.ignoredInbound.exists(r, r[0] <= int(e[1]) && int(e[e.size() - 1]) <= r[1])){{ end }}.map(e, e[0])){{ end }}
      : variables.{{ .required }}.filter(p, {{ ternary "!" "" .include }}{{ include "meshinit.policy.inList" (dict "list" .name "port" "p") | nindent 6 | trim }}).map(p, string(p))
{{- else if .include }}
  expression: |-
    !variables.outboundRequired || !variables.{{ .name }}Readable || variables.{{ .name }}All ? [] : [4, 6].filter(f,
      !variables.allowedAll.exists(a, a == f) && !variables.{{ .name }}Prefixes.exists(p, p.prefixLength() == 0 && p.ip().family() == f))
      .map(f, 'IPv' + string(f))
{{- else }}
  expression: |-
    !variables.outboundRequired || !variables.{{ .name }}Readable ? []
      : variables.{{ .name }}All ? (variables.allowedAll.size() == 2 ? [] : ['*'])
      : variables.{{ .name }}Prefixes.filter(p, !variables.allowed.exists(a, a.containsCIDR(p))).map(p, string(p))
{{- end }}
{{- end -}}

{{- /* meshinit.policy.ports: "port 80" or "ports 80, 443", for the list variable named. */ -}}
{{- define "meshinit.policy.ports" -}}
(variables.{{ . }}.size() == 1 ? 'port ' + string(variables.{{ . }}[0]) : 'ports ' + variables.{{ . }}.map(p, string(p)).join(', '))
{{- end -}}

{{- /*
meshinit.policy.required: what the RedirectPolicy requires in a direction
(inbound or outbound), for messages: "every inbound port (interception:
Required)" or "inbound ports 8443, 9443"; requiredAre ends it with "is" or
"are".
*/ -}}
{{- define "meshinit.policy.required" -}}
(variables.allPorts ? 'every {{ . }} port (interception: Required)' : '{{ . }} ' + {{ include "meshinit.policy.ports" (printf "required%s" (title .)) }})
{{- end -}}
{{- define "meshinit.policy.requiredAre" -}}
(variables.allPorts ? 'every {{ . }} port is' : '{{ . }} ' + {{ include "meshinit.policy.portsAre" (printf "required%s" (title .)) }})
{{- end -}}

{{- /* meshinit.policy.portsAre: "port 80 is" or "ports 80, 443 are", for the list variable named. */ -}}
{{- define "meshinit.policy.portsAre" -}}
({{ include "meshinit.policy.ports" . }} + (variables.{{ . }}.size() == 1 ? ' is' : ' are'))
{{- end -}}

{{- /*
meshinit.policy.unreadable: for one list source (see listSources), the
message saying it cannot be read while the RedirectPolicy requires ports in
its direction, or ''.
*/ -}}
{{- define "meshinit.policy.unreadable" -}}
{{- if or (eq .kind "ids") (eq .kind "names") }}
!variables.{{ .name }}Checked || variables.{{ .name }}Readable ? '' :
  '{{ .field }} ' + (variables.{{ .name }}TooLong
    ? strings.quote(variables.first64.map(i, variables.{{ .name }}Raw.charAt({{ .skip }} + i)).join() + '...') + ' is longer than ' + string(variables.maxListBytes)
      + ' bytes or ' + string(variables.maxListEntries) + ' entries'
    : 'entry ' + {{ include "meshinit.policy.quoted" (printf "variables.%sBad[0]" .name) }}
{{- if eq .kind "ids" }}
      + ' is not a numeric ID 0-4294967294')
{{- else }}
      + ' is not an interface name (1-15 letters, digits, "_", "." or "-", not starting with "-" or ".")')
{{- end }}
  + ', so RedirectPolicy ' + variables.policy + ' cannot check it against {{ .spec }}'
{{- else }}
!variables.{{ .direction }}Required || variables.{{ .name }}Readable ? '' :
  '{{ .field }} ' + (variables.{{ .name }}TooLong
    ? strings.quote(variables.first64.map(i, variables.{{ .name }}Raw.charAt({{ .skip }} + i)).join() + '...') + ' is longer than ' + string(variables.maxListBytes)
      + ' bytes or ' + string(variables.maxListEntries) + ' entries'
    : 'entry ' + {{ include "meshinit.policy.quoted" (printf "variables.%sBad[0]" .name) }}
{{- if eq .kind "ports" }}
      + ' is not a port 1-65535 or a range first-last of them')
{{- else }}
      + ' is not an IP address or a CIDR (IPv4-mapped IPv6 addresses are refused: write them as IPv4)')
{{- end }}
  + ', so RedirectPolicy ' + variables.policy + ' cannot check that ' + {{ include "meshinit.policy.requiredAre" .direction }} + ' intercepted'
{{- end }}
{{- end -}}

{{- /*
meshinit.policy.violation: for one list source (see listSources), the
message saying what it takes around the proxy that the RedirectPolicy
requires (its <name>Violations), or ''.
*/ -}}
{{- define "meshinit.policy.violation" -}}
variables.{{ .name }}Violations.size() == 0 ? '' :
{{- if or (eq .kind "ids") (eq .kind "names") }}
  '{{ .field }} ' + {{ include "meshinit.policy.quoted" (printf "variables.%sValue" .name) }}
{{- if eq .kind "ids" }}
  + ' lets the processes of {{ .what }} ' + {{ include "meshinit.policy.cut" (dict "s" (printf "variables.%sViolations.map(e, string(e)).join(', ')" .name) "n" 256) }}
  + ' send their traffic around the proxy'
{{- else }}
  + ' takes inbound traffic on interface ' + {{ include "meshinit.policy.cut" (dict "s" (printf "variables.%sViolations.join(', ')" .name) "n" 256) }}
  + ' around the proxy'
{{- end }}
  + ', but RedirectPolicy ' + variables.policy + ' requires ' + {{ include "meshinit.policy.required" .direction }} + ' to reach the proxy'
  + ' and allows excluding ' + (variables.{{ .allowed }}.size() == 0 ? 'no {{ .what }}' : 'only ' + variables.{{ .allowed }}.map(a, string(a)).join(', '))
  + ' ({{ .spec }})'
{{- else if eq .kind "ports" }}
  variables.allPorts
{{- if .include }}
  ? 'every {{ .direction }} port is required by RedirectPolicy ' + variables.policy + ' (interception: Required), so {{ .field }} must be "*"'
{{- else }}
  ? 'every {{ .direction }} port is required by RedirectPolicy ' + variables.policy + ' (interception: Required), so {{ .field }} cannot list '
    + {{ include "meshinit.policy.cut" (dict "s" (printf "variables.%sViolations.join(', ')" .name) "n" 256) }}
{{- end }}
  : {{ include "meshinit.policy.portsAre" (printf "%sViolations" .name) }} + ' required by RedirectPolicy ' + variables.policy
{{- if .include }}
  + ' and must be listed in {{ .field }} (or set it to "*")'
{{- else }}
  + ' and cannot be listed in {{ .field }}'
{{- end }}
{{- else }}
  '{{ .field }} ' + {{ include "meshinit.policy.quoted" (printf "variables.%sValue" .name) }}
{{- if .include }}
  + ' leaves ' + variables.{{ .name }}Violations.join(' and ') + ' destinations out of the proxy (set it to "*")'
{{- else }}
  + ' takes ' + {{ include "meshinit.policy.cut" (dict "s" (printf "variables.%sViolations.join(', ')" .name) "n" 256) }} + ' around the proxy'
{{- end }}
  + ', but RedirectPolicy ' + variables.policy + ' requires ' + {{ include "meshinit.policy.required" "outbound" }}
  + ' to reach it and allows excluding ' + (variables.allowed.size() == 0 ? 'no destination' : 'only ' + variables.allowed.map(a, string(a)).join(', '))
  + ' (allowedOutboundCIDRExclusions)'
{{- end }}
{{- end -}}


{{- /*
meshinit.policy.scalars: the proxy's ports and identity, and the DNS
capture, a pod may set, as JSON: key, name (the variables' prefix; the
chart's value is variables.<name>), kind (port, id or capture) and arg (the
position of --<key>= in meshinit.policy.chartArgs).
*/ -}}
{{- define "meshinit.policy.scalars" -}}
{{- $args := include "meshinit.policy.chartArgs" . | fromJsonArray -}}
{{- $out := list -}}
{{- range list (list "outbound-proxy-port" "outboundProxyPort" "port") (list "inbound-proxy-port" "inboundProxyPort" "port") (list "proxy-uid" "proxyUID" "id") (list "proxy-gid" "proxyGID" "id") (list "dns-proxy-port" "dnsProxyPort" "port") (list "capture-dns" "captureDNS" "capture") -}}
{{- $prefix := printf "--%s=" (index . 0) -}}
{{- $i := 0 -}}
{{- range $j, $a := $args }}{{ if eq $a $prefix }}{{ $i = $j }}{{ end }}{{ end -}}
{{- $out = append $out (dict "key" (index . 0) "name" (index . 1) "kind" (index . 2) "arg" $i "skip" (len $prefix)
  "mesh" (include "meshinit.mesh.annotationOf" (dict "key" (index . 0) "root" $))) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{- /*
meshinit.policy.scalarValue: the string expression s read as a port or ID
(kind), -1 when it cannot be; a DNS capture (kind capture) as its rank in
meshinit.policy.captureRanks, the more captured the higher.
*/ -}}
{{- define "meshinit.policy.scalarValue" -}}
{{- if eq .kind "port" -}}
({{ include "meshinit.policy.isPort" (printf "%s.trim()" .s) }} ? int({{ .s }}.trim()) : -1)
{{- else if eq .kind "capture" -}}
({{ include "meshinit.policy.captureRanks" . }}[?{{ .s }}].orValue(-1))
{{- else -}}
({{ include "meshinit.policy.isID" (printf "%s.trim()" .s) }} ? int({{ .s }}.trim()) : -1)
{{- end -}}
{{- end -}}

{{- /* meshinit.policy.captureRanks: capture-dns's values, by how much DNS each sends to the DNS proxy (read exactly, as the redirector reads them). */ -}}
{{- define "meshinit.policy.captureRanks" -}}
{'off': 0, 'nameservers': 1, 'all': 2}
{{- end -}}

{{- /*
meshinit.policy.scalarVariables: the variables of one of meshinit.policy.scalars
that the policy reads: <name>Effective for an ID (the proxy-identity check),
<name>Least for a DNS capture (less than the chart's is refused),
<name>Overridden and <name>Override for the others (and their Annotation
and Arg, which the inbound ports never captured read).
*/ -}}
{{- define "meshinit.policy.scalarVariables" -}}
{{- $annotation := printf "variables.annotations['traffic.meshinit.io/%s']" .key -}}
{{- if .mesh }}
{{- /* meshinit's own annotation, else the mesh's (both set: the injector refuses the pod) */}}
{{- $annotation = printf "variables.annotations[?'traffic.meshinit.io/%s'].orValue(variables.annotations[?'%s'].orValue(''))" .key .mesh }}
{{- end -}}
- name: {{ .name }}Annotated
  expression: "'traffic.meshinit.io/{{ .key }}' in variables.annotations{{ with .mesh }} || '{{ . }}' in variables.annotations{{ end }}"
- name: {{ .name }}Annotation
  expression: "variables.{{ .name }}Annotated ? {{ include "meshinit.policy.scalarValue" (dict "s" $annotation "kind" .kind) }} : variables.{{ .name }}"
- name: {{ .name }}Arg
  expression: "variables.injected && !variables.settingsAsChart ? {{ include "meshinit.policy.scalarValue" (dict "s" (printf "variables.meshinitArgs[%d].substring(%d)" (int .arg) (int .skip)) "kind" .kind) }} : variables.{{ .name }}"
{{- if eq .kind "id" }}
- name: {{ .name }}Effective
  expression: "variables.injected ? variables.{{ .name }}Arg : variables.{{ .name }}Annotation"
{{- end }}
{{- if eq .kind "capture" }}
- name: {{ .name }}Least
  expression: "variables.{{ .name }}Annotation < variables.{{ .name }}Arg ? variables.{{ .name }}Annotation : variables.{{ .name }}Arg"
{{- else }}
- name: {{ .name }}Overridden
  expression: "variables.{{ .name }}Annotation != variables.{{ .name }} || variables.{{ .name }}Arg != variables.{{ .name }}"
- name: {{ .name }}Override
  expression: "variables.{{ .name }}Annotation != variables.{{ .name }} ? variables.{{ .name }}Annotation : variables.{{ .name }}Arg"
{{- end }}
{{- end -}}

{{- /*
meshinit.policy.ignoredRanges: the chart's ignored-inbound-ports (only the
chart sets them) as a CEL list of [first, last].
*/ -}}
{{- define "meshinit.policy.ignoredRanges" -}}
{{- $out := list -}}
{{- range splitList "," (include "meshinit.redirect.setting" (dict "key" "ignored-inbound-ports" "root" .)) -}}
{{- $e := trim . -}}
{{- if $e -}}
{{- $b := splitList "-" $e -}}
{{- $out = append $out (list (int (trim (first $b))) (int (trim (last $b)))) -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{- /*
meshinit.policy.annotationNames: the annotations that set the setting whose
key is given, for messages: "traffic.meshinit.io/<key>", and "or <the mesh's
annotation>" with a mesh preset that reads one as it. Argument:
(dict "key" <key> "root" $).
*/ -}}
{{- define "meshinit.policy.annotationNames" -}}
traffic.meshinit.io/{{ .key }}{{ with include "meshinit.mesh.annotationOf" . }} or {{ . }}{{ end }}
{{- end -}}

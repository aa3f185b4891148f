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
meshinit.policy.portListVariables: variables that parse one port-list
annotation exactly as redirect.ParsePortList does. Arguments: name (variable
prefix), annotation, default (the value when the annotation is absent).
  <name>All     the value is "*" (surrounding whitespace ignored)
  <name>Entries otherwise each comma-separated entry as [entry, first, last]
                (entry and bounds trimmed; last only for a range), empty ones dropped
  <name>Bad     the entries that are not a port 1-65535 or a range first-last
                of them with first <= last ("*" inside a list is one)
  <name>Ranges  the entries as [first, last] integers, when none is bad
  <name>Ports, <name>Spans  the single ports and the true ranges among them
                (list membership costs far less than a comprehension)
Whitespace is what Go's strings.TrimSpace removes (CEL's trim() is that
function); leading zeros are allowed, signs are not, as for strconv.ParseUint.
*/ -}}
{{- define "meshinit.policy.portListVariables" -}}
- name: {{ .name }}Value
  expression: "variables.annotations[?'{{ .annotation }}'].orValue('{{ .default }}')"
- name: {{ .name }}All
  expression: "variables.{{ .name }}Value.trim() == '*'"
- name: {{ .name }}Entries
  expression: |-
    (variables.{{ .name }}All ? [] : variables.{{ .name }}Value.split(','))
      .map(e, e.trim()).filter(e, e != '')
      .map(e, [e] + e.split('-').map(b, b.trim()))
- name: {{ .name }}Bad
  expression: |-
    variables.{{ .name }}Entries.filter(e, !(e.size() <= 3
      && {{ include "meshinit.policy.isPort" "e[1]" }}
      && {{ include "meshinit.policy.isPort" "e[e.size() - 1]" }}
      && int(e[1]) <= int(e[e.size() - 1])))
- name: {{ .name }}Ranges
  expression: |-
    variables.{{ .name }}Bad.size() > 0 ? [] :
      variables.{{ .name }}Entries.map(e, [int(e[1]), int(e[e.size() - 1])])
- name: {{ .name }}Ports
  expression: "variables.{{ .name }}Ranges.filter(r, r[0] == r[1]).map(r, r[0])"
- name: {{ .name }}Spans
  expression: "variables.{{ .name }}Ranges.filter(r, r[0] != r[1])"
{{- end -}}

{{- /* meshinit.policy.isPort: the string expression given is a decimal port 1-65535. */ -}}
{{- define "meshinit.policy.isPort" -}}
({{ . }}.matches('^0*[0-9]{1,5}$') && int({{ . }}) >= 1 && int({{ . }}) <= 65535)
{{- end -}}

{{- /*
meshinit.policy.inList: the port-list variables named by list (a prefix given
to portListVariables) contain the port held by the CEL variable port.
*/ -}}
{{- define "meshinit.policy.inList" -}}
(variables.{{ .list }}All || {{ .port }} in variables.{{ .list }}Ports
  || variables.{{ .list }}Spans.exists(r, r[0] <= {{ .port }} && {{ .port }} <= r[1]))
{{- end -}}

{{- /* meshinit.policy.portsAre: "port 80 is" or "ports 80, 443 are", for the list variable named. */ -}}
{{- define "meshinit.policy.portsAre" -}}
(variables.{{ . }}.size() == 1 ? 'port ' + string(variables.{{ . }}[0]) + ' is' : 'ports ' + variables.{{ . }}.map(p, string(p)).join(', ') + ' are')
{{- end -}}

{{- /*
meshinit.policy.badListValidation: the validation rejecting an unparsable
port-list annotation when the policy requires ports it could hide. Arguments:
list (portListVariables prefix), annotation, required (the variable holding
the required ports), direction (for the message).
*/ -}}
{{- define "meshinit.policy.badListValidation" -}}
- expression: "!variables.intercepted || variables.{{ .required }}.size() == 0 || variables.{{ .list }}Bad.size() == 0"
  reason: Invalid
  messageExpression: |-
    '{{ .annotation }} entry ' + strings.quote(variables.{{ .list }}Bad[0][0].size() > 64
      ? variables.{{ .list }}Bad[0][0].substring(0, 64) + '...' : variables.{{ .list }}Bad[0][0])
    + ' is not a port 1-65535 or a range first-last of them, so RedirectPolicy ' + variables.policy
    + ' cannot check that {{ .direction }} ' + {{ include "meshinit.policy.portsAre" .required }} + ' intercepted'
{{- end -}}

{{- /*
The redirector's settings (Go: redirect.Config, its settings table in
redirect/settings.go), as the chart configures them. The webhook renders
them as the init container's arguments (redirect.Config.Args); the policy
checks those arguments. The helpers that name settings are generated from
the settings table (redirect/generate_test.go); policy/settings_test.go
checks the rest against the Go code.
*/ -}}

{{- /* generated from the settings table (redirect/settings.go) by make generate: begin */ -}}
{{- /*
meshinit.redirect.defaults: redirect.Defaults, one "key=value" line per
setting, in the order of the settings table (the order of Config.Args).
*/ -}}
{{- define "meshinit.redirect.defaults" -}}
outbound-proxy-port=15001
inbound-proxy-port=15006
proxy-uid=1337
proxy-gid=1337
include-inbound-ports=*
exclude-inbound-ports=
ignored-inbound-ports=15020,15021,15090
exclude-inbound-interfaces=
include-outbound-ports=*
exclude-outbound-ports=
include-outbound-cidrs=*
exclude-outbound-cidrs=
exclude-outbound-uids=
exclude-outbound-gids=
capture-dns=off
dns-proxy-port=15053
ipv6=auto
iptables-mode=auto
{{- end -}}

{{- /*
meshinit.redirect.orderedLists: the list settings pods cannot set, one a
line as "<key> <kind>" (kind: ports, ids or names). The policy compares
their arguments with the chart's values, so those must be written as
Config.Args renders them: in ascending order, without duplicates.
*/ -}}
{{- define "meshinit.redirect.orderedLists" -}}
ignored-inbound-ports ports
{{- end -}}

{{- /*
meshinit.redirect.podSettings: the settings pods set by annotation
(traffic.meshinit.io/<key>), one a line as "<key> <kind>" (kind: port, id,
enum, ports, cidrs, ids or names). The policy checks their values against
the RedirectPolicy instead of comparing them with the chart's.
*/ -}}
{{- define "meshinit.redirect.podSettings" -}}
outbound-proxy-port port
inbound-proxy-port port
proxy-uid id
proxy-gid id
include-inbound-ports ports
exclude-inbound-ports ports
exclude-inbound-interfaces names
include-outbound-ports ports
exclude-outbound-ports ports
include-outbound-cidrs cidrs
exclude-outbound-cidrs cidrs
exclude-outbound-uids ids
exclude-outbound-gids ids
capture-dns enum
dns-proxy-port port
{{- end -}}
{{- /* generated: end */ -}}

{{- /*
meshinit.redirect.settings: the chart's effective settings, the defaults
with webhook.inject.redirect over them, as JSON [[key, value], ...] in table
order; numbers in decimal. values.schema.json requires the cluster's own
settings in the form Config.Args renders them; a list (of ports, IDs or
interface names) must also be in its order (sorted, no duplicates), which
the schema cannot say, so it is checked here.
*/ -}}
{{- define "meshinit.redirect.settings" -}}
{{- $set := .Values.webhook.inject.redirect -}}
{{- $ordered := dict -}}
{{- range include "meshinit.redirect.orderedLists" . | splitList "\n" -}}
{{- $kk := splitList " " . -}}
{{- $_ := set $ordered (first $kk) (last $kk) -}}
{{- end -}}
{{- $out := list -}}
{{- range splitList "\n" (include "meshinit.redirect.defaults" .) -}}
{{- $kv := splitn "=" 2 . -}}
{{- $v := $kv._1 -}}
{{- if hasKey $set $kv._0 -}}
{{- $v = index $set $kv._0 -}}
{{- if not (kindIs "string" $v) }}{{ $v = $v | int64 | toString }}{{ end -}}
{{- end -}}
{{- $kind := get $ordered $kv._0 -}}
{{- if $kind -}}
{{- $prev := "" -}}
{{- range $v | splitList "," | compact -}}
{{- $key := . -}}
{{- $bad := false -}}
{{- if eq $kind "ports" -}}
{{- $b := splitList "-" . -}}
{{- $key = printf "%05d-%05d" (first $b | atoi) (last $b | atoi) -}}
{{- $bad = and (eq (len $b) 2) (ge (first $b | atoi) (last $b | atoi)) -}}
{{- else if eq $kind "ids" -}}
{{- $key = printf "%010d" (atoi .) -}}
{{- end -}}
{{- if or (not (lt $prev $key)) $bad -}}
{{- if eq $kind "ports" -}}
{{- fail (printf "webhook.inject.redirect.%s %q: write ports and ranges first-last (first below last) in ascending order without duplicates, as the redirector renders them (e.g. 15020,15021,15090)" $kv._0 $v) -}}
{{- else if eq $kind "ids" -}}
{{- fail (printf "webhook.inject.redirect.%s %q: write IDs in ascending order without duplicates, as the redirector renders them (e.g. 1000,2000)" $kv._0 $v) -}}
{{- else -}}
{{- fail (printf "webhook.inject.redirect.%s %q: write interface names in ascending (byte) order without duplicates, as the redirector renders them (e.g. eth1,net1)" $kv._0 $v) -}}
{{- end -}}
{{- end -}}
{{- $prev = $key -}}
{{- end -}}
{{- end -}}
{{- $out = append $out (list $kv._0 $v) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{- /*
meshinit.redirect.setting: the chart's effective value of one redirect
setting. Argument: (dict "key" <key> "root" $).
*/ -}}
{{- define "meshinit.redirect.setting" -}}
{{- $key := .key -}}
{{- range include "meshinit.redirect.settings" .root | fromJsonArray }}{{ if eq (index . 0) $key }}{{ index . 1 }}{{ end }}{{ end -}}
{{- end -}}

{{- /* meshinit.redirect.image: the init container's image (webhook.inject.image). */ -}}
{{- define "meshinit.redirect.image" -}}
{{ include "meshinit.image" (dict "image" .Values.webhook.inject.image "root" .) }}
{{- end -}}

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
meshinit.redirect.canonicalLists: the port-list settings pods cannot set,
one a line. The policy compares their arguments with the chart's values,
so those must be written as Config.Args renders them: each entry once.
*/ -}}
{{- define "meshinit.redirect.canonicalLists" -}}
ignored-inbound-ports
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

{{- /* meshinit.redirect.maxListBytes, maxListEntries: the list limits (MaxListBytes, MaxListEntries). */ -}}
{{- define "meshinit.redirect.maxListBytes" -}}4096{{- end -}}
{{- define "meshinit.redirect.maxListEntries" -}}256{{- end -}}

{{- /*
meshinit.redirect.table: the settings table, as JSON, in its order: each
setting's key, the pod annotation that sets it ("" when pods cannot), its
kind (port, id, ports, cidrs, ids, names, enum) and an enum's values. The
MutatingAdmissionPolicy reads and renders each setting by its kind
(_inject.tpl), so a new setting of a known kind needs nothing more.
*/ -}}
{{- define "meshinit.redirect.table" -}}
[{"key":"outbound-proxy-port","annotation":"traffic.meshinit.io/outbound-proxy-port","kind":"port"},
 {"key":"inbound-proxy-port","annotation":"traffic.meshinit.io/inbound-proxy-port","kind":"port"},
 {"key":"proxy-uid","annotation":"traffic.meshinit.io/proxy-uid","kind":"id"},
 {"key":"proxy-gid","annotation":"traffic.meshinit.io/proxy-gid","kind":"id"},
 {"key":"include-inbound-ports","annotation":"traffic.meshinit.io/include-inbound-ports","kind":"ports"},
 {"key":"exclude-inbound-ports","annotation":"traffic.meshinit.io/exclude-inbound-ports","kind":"ports"},
 {"key":"ignored-inbound-ports","annotation":"","kind":"ports"},
 {"key":"exclude-inbound-interfaces","annotation":"traffic.meshinit.io/exclude-inbound-interfaces","kind":"names"},
 {"key":"include-outbound-ports","annotation":"traffic.meshinit.io/include-outbound-ports","kind":"ports"},
 {"key":"exclude-outbound-ports","annotation":"traffic.meshinit.io/exclude-outbound-ports","kind":"ports"},
 {"key":"include-outbound-cidrs","annotation":"traffic.meshinit.io/include-outbound-cidrs","kind":"cidrs"},
 {"key":"exclude-outbound-cidrs","annotation":"traffic.meshinit.io/exclude-outbound-cidrs","kind":"cidrs"},
 {"key":"exclude-outbound-uids","annotation":"traffic.meshinit.io/exclude-outbound-uids","kind":"ids"},
 {"key":"exclude-outbound-gids","annotation":"traffic.meshinit.io/exclude-outbound-gids","kind":"ids"},
 {"key":"capture-dns","annotation":"traffic.meshinit.io/capture-dns","kind":"enum","values":["off","nameservers","all"]},
 {"key":"dns-proxy-port","annotation":"traffic.meshinit.io/dns-proxy-port","kind":"port"},
 {"key":"ipv6","annotation":"","kind":"enum","values":["auto","on","off"]},
 {"key":"iptables-mode","annotation":"","kind":"enum","values":["auto","legacy","nft"]}]
{{- end -}}
{{- /* generated: end */ -}}

{{- /*
meshinit.redirect.settings: the chart's effective settings, the defaults
with inject.redirect over them, as JSON [[key, value], ...] in table
order; numbers in decimal. values.schema.json requires the cluster's own
settings in the form Config.Args renders them; a port list must also hold
each entry once, with ranges first-last of first below last, which the
schema cannot say, so it is checked here.
*/ -}}
{{- define "meshinit.redirect.settings" -}}
{{- /* The preset's, then each key the values set, zero values too (which merge would take for unset: proxy-gid 0, ignored-inbound-ports ""). */ -}}
{{- $set := (include "meshinit.mesh.preset" . | fromJson).redirect | default dict -}}
{{- range $k, $v := .Values.inject.redirect }}{{ $_ := set $set $k $v }}{{ end -}}
{{- $canonical := include "meshinit.redirect.canonicalLists" . | splitList "\n" -}}
{{- $out := list -}}
{{- range splitList "\n" (include "meshinit.redirect.defaults" .) -}}
{{- $kv := splitn "=" 2 . -}}
{{- $v := $kv._1 -}}
{{- if hasKey $set $kv._0 -}}
{{- $v = index $set $kv._0 -}}
{{- if not (kindIs "string" $v) }}{{ $v = $v | int64 | toString }}{{ end -}}
{{- end -}}
{{- if has $kv._0 $canonical -}}
{{- $entries := $v | splitList "," | compact -}}
{{- range $entries -}}
{{- $b := splitList "-" . -}}
{{- if or (ne (len (without $entries .)) (sub (len $entries) 1)) (and (eq (len $b) 2) (ge (first $b | atoi) (last $b | atoi))) -}}
{{- fail (printf "inject.redirect.%s %q: write each port or range first-last (first below last) once, as the redirector renders them (e.g. 15020,15021,15090)" $kv._0 $v) -}}
{{- end -}}
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

{{- /* meshinit.redirect.image: the init container's image (inject.image). */ -}}
{{- define "meshinit.redirect.image" -}}
{{ include "meshinit.image" (dict "image" .Values.inject.image "root" .) }}
{{- end -}}

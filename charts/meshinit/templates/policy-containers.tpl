{{- /*
CEL of the RedirectPolicy's policy (policy-validatingadmissionpolicy.yaml)
about what the pod's containers and the pod itself could do around the
proxy: take the proxy's identity (the redirect rules never touch the
traffic of its UID and GID), reach netfilter or send raw packets, or act
through the node. docs/attackers-checklist.md says, field by field, why
each rule is there and why everything else is safe. This file renders to
nothing.
*/ -}}

{{- /*
meshinit.policy.trusts: the CEL condition that container c (a CEL
expression) is the trusted proxy container of entry e (one of
meshinit.policy.trustedEntries): its name; the namespace; its image
(a form of the entry's repository, then the tag or digest allowed: see
imageSuffix); exactly the entry's command, args (each exact or matching
its pattern), env (each variable allowed by name, with its exact value,
a value matching the pattern, or exactly its valueFrom), envFrom and
workingDir; only the entry's volume mounts, each of a volume exactly as
the entry writes it, and the ServiceAccount admission plugin's API token
(meshinit.policy.apiTokenMount); and only the entry's exec commands in its
probes and lifecycle hooks (they run in the container, as its user). A
value matched by a pattern may not contain "$(": the kubelet would expand
it.
*/ -}}
{{- define "meshinit.policy.trusts" -}}
({{ .c }}.name == {{ .e }}.name
  && ({{ .e }}.namespaces.size() == 0 || namespaceObject.metadata.name in {{ .e }}.namespaces)
  && {{ .c }}.?image.orValue('').size() <= 512
  && {{ .e }}.images.exists(f, {{ .c }}.?image.orValue('').startsWith(f) && {{ .c }}.?image.orValue('').substring(f.size()).matches({{ .e }}.suffix))
  && {{ .c }}.?command.orValue([]) == {{ .e }}.command
  && {{ .c }}.?args.orValue([]).size() == {{ .e }}.args.size()
  && {{ .e }}.argIdx.all(i, {{ .e }}.args[i][0] == '=' ? {{ .c }}.args[i] == {{ .e }}.args[i][1]
    : {{ .c }}.args[i].size() <= 1024 && !{{ .c }}.args[i].contains('$(') && {{ .c }}.args[i].matches({{ .e }}.args[i][1]))
  && {{ .c }}.?env.orValue([]).size() <= 256
  && {{ .c }}.?env.orValue([]).all(v, {{ .e }}.env.exists(s, s[1] == v.name && (s[0] == 'from'
    ? dyn(v).?valueFrom.orValue({}) == s[2]
    : !has(v.valueFrom) && (s[0] == '=' ? v.?value.orValue('') == s[2]
      : v.?value.orValue('').size() <= 4096 && !v.?value.orValue('').contains('$(') && v.?value.orValue('').matches(s[2])))))
  && {{ .c }}.?envFrom.orValue([]) == {{ .e }}.envFrom
  && {{ .c }}.?workingDir.orValue('') == {{ .e }}.workingDir
  && {{ .c }}.?volumeMounts.orValue([]).size() <= 64
  && {{ .c }}.?volumeMounts.orValue([]).all(m, {{ .e }}.volumeMounts.exists(s, dyn(m) == s)
    && variables.volumes.exists(v, v.name == m.name && {{ .e }}.volumes.exists(w, dyn(v) == w)) || {{ include "meshinit.policy.apiTokenMount" "m" }})
  && [?{{ .c }}.?livenessProbe.?exec.?command, ?{{ .c }}.?readinessProbe.?exec.?command, ?{{ .c }}.?startupProbe.?exec.?command,
    ?{{ .c }}.?lifecycle.?postStart.?exec.?command, ?{{ .c }}.?lifecycle.?preStop.?exec.?command].all(x, x in {{ .e }}.execs))
{{- end -}}

{{- /*
meshinit.policy.apiTokenMount: the CEL condition that mount m (a CEL
expression) is the one the ServiceAccount admission plugin adds to every
container of a pod that automounts its token: read-only at the token path,
nothing else set, of a volume that is exactly the plugin's projected volume
(whatever its name, kube-api-access-<random>): what the API server issues,
the same for any pod.
*/ -}}
{{- define "meshinit.policy.apiTokenMount" -}}
({{ . }}.mountPath == {{ include "meshinit.inject.tokenPath" . | squote }} && {{ . }}.?readOnly.orValue(false)
  && !['subPath', 'subPathExpr', 'mountPropagation', 'recursiveReadOnly'].exists(f, f in dyn({{ . }}))
  && variables.volumes.exists(v, v.name == {{ . }}.name && dyn(v).?projected.orValue({}) == variables.apiTokenVolume))
{{- end -}}

{{- /*
meshinit.policy.capabilityProblems: for container c (a CEL expression),
what is wrong with the capabilities it adds and drops, as a list of
imperative fixes. The container runtime reads a capability name with Go's
Unicode-aware strings.ToUpper and prefixes CAP_ (containerd; CRI-O keeps
an existing cap_ prefix), so "net_admın" (dotless i) becomes
CAP_NET_ADMIN: a name added that is not ASCII (its bytes more than its
characters) or longer than any capability's is refused, and the others are
compared upper-cased (upperAscii, the same for ASCII), an optional CAP_
prefix removed. (A name dropped can only drop more, and only an exact ALL
is read as all.) Where nothing is required of the pod yet (a RedirectPolicy
that is not Optional, with no port to guard), and for the trusted proxy
containers, the capabilities that reach netfilter or raw packets
(variables.netCapabilities) are refused; a container that is not trusted,
where a port is required, must drop ALL (the runtime's default set is not
visible here, and containerd's includes NET_RAW, SETUID and SETGID) and add
back only variables.addableCapabilities, and an ephemeral container that
targets another (so shares its processes, whatever shareProcessNamespace
says) not KILL either. Lists longer than any real one are
refused first, so the work per container is bounded.
*/ -}}
{{- define "meshinit.policy.capabilityProblems" -}}
({{ .c }}.?securityContext.?capabilities.?add.orValue([]).size() > 16 || {{ .c }}.?securityContext.?capabilities.?drop.orValue([]).size() > 64
  ? ['add at most 16 capabilities and drop at most 64']
  : {{ .c }}.?securityContext.?capabilities.?add.orValue([]).exists(n, n.size() > 32 || bytes(n).size() != n.size())
    ? {{ .c }}.?securityContext.?capabilities.?add.orValue([]).filter(n, n.size() > 32 || bytes(n).size() != n.size())
      .map(n, 'name capabilities in ASCII only (' + {{ include "meshinit.policy.quoted" "n" }} + ' is not: the container runtime upper-cases it with Unicode rules)')
    : {{ .strict }}
      ? ('ALL' in {{ .c }}.?securityContext.?capabilities.?drop.orValue([]) ? [] : ['drop every capability (securityContext.capabilities.drop: [ALL])'])
        + {{ .c }}.?securityContext.?capabilities.?add.orValue([]).map(n, n.upperAscii()).map(n, n.startsWith('CAP_') ? n.substring(4) : n)
          .filter(n, !(n in variables.addableCapabilities) || (n == 'KILL' && {{ .c }}.?targetContainerName.orValue('') != ''))
          .map(n, n in variables.addableCapabilities
            ? 'not add capability KILL (it targets a container, so it shares that container processes: it could stop the proxy and take its port)'
            : 'not add capability ' + n + ' (only ' + variables.addableCapabilities.join(', ') + ')')
      : {{ .c }}.?securityContext.?capabilities.?add.orValue([]).map(n, n.upperAscii()).map(n, n.startsWith('CAP_') ? n.substring(4) : n)
          .filter(n, n in variables.netCapabilities).map(n, 'not add capability ' + n + ' (it reaches the redirect rules or raw packets)'))
{{- end -}}

{{- /*
meshinit.policy.containerProblems: for container c (a CEL expression) of
the pod, other than meshinit's, what it must change, as a list of
imperative fixes ([] when nothing). trusted is the CEL condition that c is
a trusted proxy container. For every container, where the policy guards the
pod (variables.guarded): not privileged, capability names as the runtime
reads them, and no capability that reaches netfilter or raw packets. For a
container that is not trusted, where a port is required
(variables.anyRequired): drop ALL and add back only what cannot reach the
proxy's identity, netfilter or raw packets; /proc masked as usual; no
writable mount of a volume a trusted container reads; and where outbound
ports are required (the owner match exempts the proxy's UID and GID): an
explicit UID and GID other than the proxy's (the image's USER and its
/etc/passwd group are not visible here), and allowPrivilegeEscalation:
false (no_new_privs: a setuid or setgid executable, or file capabilities
beyond the container's, do not change its identity).
*/ -}}
{{- define "meshinit.policy.containerProblems" -}}
({{ .c }}.?securityContext.?privileged.orValue(false) ? ['not be privileged'] : [])
  + (!({{ .trusted }}) && variables.anyRequired
    ? (variables.outboundRequired
        ? ({{ .c }}.?securityContext.?runAsUser.orValue(variables.pod.spec.?securityContext.?runAsUser.orValue(-1)) in [-1, variables.proxyUIDEffective]
            ? ["set securityContext.runAsUser (its own or the pod's) to a UID other than the proxy's " + string(variables.proxyUIDEffective)] : [])
          + ({{ .c }}.?securityContext.?runAsGroup.orValue(variables.pod.spec.?securityContext.?runAsGroup.orValue(-1)) in [-1, variables.proxyGIDEffective]
            ? ["set securityContext.runAsGroup (its own or the pod's) to a GID other than the proxy's " + string(variables.proxyGIDEffective)] : [])
          + ({{ .c }}.?securityContext.?allowPrivilegeEscalation.orValue(true) ? ['set securityContext.allowPrivilegeEscalation: false'] : [])
        : [])
      + {{ include "meshinit.policy.capabilityProblems" (dict "c" .c "strict" "true") }}
      + ({{ .c }}.?securityContext.?procMount.orValue('Default') != 'Default' ? ['leave securityContext.procMount at Default'] : [])
      + ({{ .c }}.?volumeMounts.orValue([]).size() > 64 ? ['mount at most 64 volumes'] : {{ .c }}.?volumeMounts.orValue([])
          .filter(m, variables.proxyVolumes.exists(l, m.name in l) && !m.?readOnly.orValue(false))
          .map(m, 'mount volume ' + m.name + ' read-only (a proxy container reads it)'))
    : {{ include "meshinit.policy.capabilityProblems" (dict "c" .c "strict" "false") }})
{{- end -}}

package webhook

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/meshinit/meshinit/redirect"
)

// ContainerName is the injected init container's name.
const ContainerName = "meshinit-redirect"

// capabilities the redirector needs: NET_ADMIN to program iptables, NET_RAW
// for the raw sockets iptables opens. Everything else is dropped.
var capabilities = []corev1.Capability{"NET_ADMIN", "NET_RAW"}

// initContainer builds the redirector init container for rc: the canonical
// container, which the webhook keeps in a pod only when it is there exactly.
// Its arguments come from rc.Args, so the redirector reads exactly the
// settings the webhook decided. It carries the defaults the API server
// fills in for a pod's container (k8s.io/kubernetes pkg/apis/core/v1,
// SetDefaults_Container and SetDefaults_Pod; Config.SetDefaults does the
// resources), so the container read back on reinvocation, or from a pod
// re-created from an injected one, is equal to the one built.
//
// It runs with the least privilege the kernel allows: not as root, with a
// read-only root file system, the runtime's default seccomp profile, every
// capability dropped but the two iptables needs, and no_new_privs (the
// redirector gets those two from its image's file capabilities, which
// no_new_privs allows as they do not exceed what the container was
// given). Group 0 lets it read which legacy iptables tables exist.
// Privileged mode, for nodes whose iptables needs more, runs it as root.
func initContainer(c *Config, rc redirect.Config) corev1.Container {
	sc := &corev1.SecurityContext{
		Capabilities:             &corev1.Capabilities{Add: capabilities, Drop: []corev1.Capability{"ALL"}},
		RunAsUser:                ptr.To[int64](redirect.RedirectorUID),
		RunAsGroup:               ptr.To[int64](redirect.RedirectorGID),
		RunAsNonRoot:             ptr.To(true),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if c.Privileged {
		sc.Privileged = ptr.To(true)
		sc.RunAsUser, sc.RunAsGroup, sc.RunAsNonRoot = ptr.To[int64](0), ptr.To[int64](0), ptr.To(false)
		sc.AllowPrivilegeEscalation, sc.SeccompProfile = nil, nil // privileged: always allowed, unconfined
	}
	return corev1.Container{
		Name:                     ContainerName,
		Image:                    c.Image,
		ImagePullPolicy:          c.ImagePullPolicy,
		Args:                     append([]string{"apply"}, rc.Args()...),
		Resources:                c.Resources,
		SecurityContext:          sc,
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

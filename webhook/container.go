/*
Copyright The meshinit Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package webhook

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/meshinit/meshinit/redirect"
)

// ContainerName is the injected init container's name.
const ContainerName = "meshinit-redirect"

// TokenBlockVolume is the pod volume (an empty emptyDir) that meshinit's
// container mounts read-only at the service-account token path. The
// ServiceAccount admission plugin adds its token mount only to containers
// that have no mount at that path (k8s.io/kubernetes
// plugin/pkg/admission/serviceaccount, mountServiceAccountToken, the same at
// every supported version), so the container never holds an API token,
// whatever order admission runs in, and no second admission round is needed
// to take one out. The name cannot collide with the plugin's own volumes
// (kube-api-access-<random>).
const TokenBlockVolume = "meshinit-no-api-token"

// ServiceAccountTokenPath is where the ServiceAccount admission plugin
// mounts a pod's API token (its DefaultAPITokenMountPath).
const ServiceAccountTokenPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// tokenBlockVolume is the pod volume TokenBlockVolume, as the injector adds
// it: an empty directory.
func tokenBlockVolume() corev1.Volume {
	return corev1.Volume{Name: TokenBlockVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

// podEnv is redirect.PodEnv as the container's env (the pod's namespace,
// name and UID from the downward API, which the redirector logs), with the
// apiVersion the API server defaults a fieldRef to
// (SetDefaults_ObjectFieldSelector), so the container read back is equal to
// the one built.
func podEnv() []corev1.EnvVar {
	env := make([]corev1.EnvVar, 0, len(redirect.PodEnv))
	for _, e := range redirect.PodEnv {
		env = append(env, corev1.EnvVar{Name: e.Name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: e.FieldPath}}})
	}
	return env
}

// containerArgs are the redirector's arguments: apply, every setting of rc
// (rc.Args, in its order), then --log-format when it is not the
// redirector's default (text), so the default container's arguments are the
// settings alone.
func containerArgs(c *Config, rc redirect.Config) []string {
	args := append([]string{"apply"}, rc.Args()...)
	if c.LogFormat != "" && c.LogFormat != LogFormatText {
		args = append(args, "--log-format="+c.LogFormat)
	}
	return args
}

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
		Args:                     containerArgs(c, rc),
		Env:                      podEnv(),
		Resources:                c.Resources,
		VolumeMounts:             []corev1.VolumeMount{{Name: TokenBlockVolume, MountPath: ServiceAccountTokenPath, ReadOnly: true}},
		SecurityContext:          sc,
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
}

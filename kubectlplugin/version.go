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

package kubectlplugin

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/version"
)

// Labels the chart puts on every object (charts/meshinit/templates/_helpers.tpl).
const (
	labelVersion = "app.kubernetes.io/version"
	labelChart   = "helm.sh/chart"
)

// VersionReport is `version`: the plugin's version, the chart's and the
// running webhook's, and whether they agree.
type VersionReport struct {
	Plugin string `json:"plugin"`
	// Chart is the chart's name and version (helm.sh/chart), AppVersion
	// its appVersion (app.kubernetes.io/version), from the release's
	// objects; "" when they do not say.
	Chart      string `json:"chart,omitempty"`
	AppVersion string `json:"appVersion,omitempty"`
	// Webhook are the webhook's pods and the image each runs, in webhook
	// mode; Template the image of the Deployment's pod template.
	Webhook  []RunningImage `json:"webhook,omitempty"`
	Template string         `json:"template,omitempty"`
	// Deployment is the webhook Deployment's name.
	Deployment string    `json:"deployment,omitempty"`
	Release    release   `json:"release"`
	Findings   []Finding `json:"findings"`
	Problems   int       `json:"problems"`
}

// RunningImage is the image one webhook pod runs.
type RunningImage struct {
	Pod   string `json:"pod"`
	Image string `json:"image"`
}

func (o *options) versionCommand(noArgs cobra.PositionalArgs) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version [--client]",
		Short: "The plugin's version, the chart's and the running webhook's, with a warning when they differ",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.client {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), Version)
				return err
			}
			return o.command(func(ctx context.Context, c *clients, r release, _ scope, w io.Writer, _ []string) (int, error) {
				rep, err := gatherVersions(ctx, c, r)
				if err != nil {
					return 0, err
				}
				rep.Findings = versionFindings(rep)
				rep.Problems = countProblems(rep.Findings)
				return rep.Problems, o.out.print(w, "VersionReport", rep, func(w io.Writer, _ bool) error {
					return printVersions(w, rep)
				})
			})(cmd, args)
		},
	}
	cmd.Flags().BoolVar(&o.client, "client", false, "only the plugin's version, without the cluster")
	return cmd
}

// gatherVersions reads the chart's labels from the release's
// ValidatingAdmissionPolicyBindings (both injectors have them) and the
// webhook Deployment's, and the images its pods run.
func gatherVersions(ctx context.Context, c *clients, r release) (VersionReport, error) {
	rep := VersionReport{Plugin: Version, Release: r}
	bindings, err := c.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().List(ctx, r.selector())
	if err != nil {
		return rep, readError("list", "validatingadmissionpolicybindings.admissionregistration.k8s.io", "", err)
	}
	for _, b := range bindings.Items {
		if rep.Chart == "" {
			rep.Chart, rep.AppVersion = b.Labels[labelChart], b.Labels[labelVersion]
		}
	}
	sel := r.selector()
	sel.LabelSelector += "," + labelComponent + "=webhook"
	deployments, err := c.kube.AppsV1().Deployments(r.Namespace).List(ctx, sel)
	if err != nil {
		return rep, readError("list", "deployments.apps", r.Namespace, err)
	}
	for _, d := range deployments.Items {
		if rep.Chart == "" {
			rep.Chart, rep.AppVersion = d.Labels[labelChart], d.Labels[labelVersion]
		}
		if len(d.Spec.Template.Spec.Containers) > 0 {
			rep.Template, rep.Deployment = d.Spec.Template.Spec.Containers[0].Image, d.Name
		}
		pods, err := webhookPods(ctx, c, d)
		if err != nil {
			return rep, err
		}
		for _, p := range pods {
			if running(&p) && len(p.Spec.Containers) > 0 {
				rep.Webhook = append(rep.Webhook, RunningImage{Pod: p.Name, Image: p.Spec.Containers[0].Image})
			}
		}
	}
	slices.SortFunc(rep.Webhook, func(a, b RunningImage) int { return strings.Compare(a.Pod, b.Pod) })
	return rep, nil
}

func webhookPods(ctx context.Context, c *clients, d appsv1.Deployment) ([]corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s: spec.selector: %w", d.Namespace, d.Name, err)
	}
	if sel.Empty() {
		sel = labels.Nothing()
	}
	list, err := c.kube.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, readError("list", "pods", d.Namespace, err)
	}
	return list.Items, nil
}

// imageVersion is the tag of an image reference ("" for a digest only).
func imageVersion(image string) string {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		return name[i+1:]
	}
	return ""
}

// minor is v's major.minor, "" when v is no version.
func minor(v string) string {
	parsed, err := version.ParseGeneric(strings.TrimPrefix(v, "v"))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d.%d", parsed.Major(), parsed.Minor())
}

// versionFindings: the plugin and the chart have the same minor version;
// every webhook pod runs the Deployment's image, and its tag is the
// chart's appVersion.
func versionFindings(rep VersionReport) []Finding {
	var out []Finding
	r := rep.Release
	switch {
	case rep.AppVersion == "":
		out = append(out, info(CodeChartUnknown, "chart", "the release's objects carry no "+labelVersion+" label: not installed by the chart, so versions are not compared"))
	case minor(rep.Plugin) == "":
		out = append(out, info(CodeVersionSkew, "plugin", fmt.Sprintf("plugin %q is a development build: not compared with the chart's %s", rep.Plugin, rep.AppVersion)))
	case minor(rep.Plugin) != minor(rep.AppVersion):
		out = append(out, warning(CodeVersionSkew, "plugin", fmt.Sprintf("plugin %s, chart %s (%s): another minor version, so its findings follow another release's code", rep.Plugin, rep.AppVersion, rep.Chart),
			"install the plugin of release "+rep.AppVersion+" (make plugin at that tag)"))
	default:
		out = append(out, ok(CodeVersionSkew, "plugin", fmt.Sprintf("plugin %s, chart %s (%s)", rep.Plugin, rep.AppVersion, rep.Chart)))
	}
	if rep.Template == "" {
		return out // policy mode, or no webhook Deployment: check says which
	}
	var other []string
	for _, p := range rep.Webhook {
		if p.Image != rep.Template {
			other = append(other, p.Pod+" runs "+p.Image)
		}
	}
	tag := imageVersion(rep.Template)
	rollout := fmt.Sprintf("kubectl -n %s rollout status deployment/%s", r.Namespace, rep.Deployment)
	switch {
	case len(other) > 0:
		out = append(out, warning(CodeWebhookSkew, "webhook", fmt.Sprintf("not every replica runs the Deployment's %s: %s", rep.Template, strings.Join(other, "; ")), rollout))
	case len(rep.Webhook) == 0:
		out = append(out, warning(CodeWebhookSkew, "webhook", "no webhook pod runs", rollout))
	case tag != "" && rep.AppVersion != "" && strings.TrimPrefix(tag, "v") != strings.TrimPrefix(rep.AppVersion, "v"):
		out = append(out, warning(CodeWebhookSkew, "webhook", fmt.Sprintf("runs %s, tag %s, not the chart's appVersion %s (webhook.image.tag overrides it?)", rep.Template, tag, rep.AppVersion), helmFix(r)))
	default:
		out = append(out, ok(CodeWebhookSkew, "webhook", fmt.Sprintf("%s on every replica (%d)", rep.Template, len(rep.Webhook))))
	}
	return out
}

// printVersions is `version`'s table.
func printVersions(w io.Writer, rep VersionReport) error {
	chart := "unknown"
	if rep.Chart != "" {
		chart = rep.Chart + " (appVersion " + rep.AppVersion + ")"
	}
	rows := [][]string{{"plugin", rep.Plugin, "this binary"}, {"chart", chart, "labels of " + rep.Release.String()}}
	for _, p := range rep.Webhook {
		v := imageVersion(p.Image)
		if v == "" {
			v = "-"
		}
		rows = append(rows, []string{"webhook", v, "pod " + p.Pod + ": " + p.Image})
	}
	if err := table(w, []string{"COMPONENT", "VERSION", "FROM"}, rows); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return findingsTable(w, rep.Findings, "no problems")
}

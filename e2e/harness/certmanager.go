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

package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/meshinit/meshinit/charts"
)

// cert-manager as its documentation installs it: Helm release cert-manager
// in namespace cert-manager (the chart's certs.certManagerCAInjector
// default names its cainjector's ServiceAccount there).
const (
	CertManagerNamespace = "cert-manager"
	certManagerRelease   = "cert-manager"
	// certManagerLabel marks what StartCertManager applies, so that a run
	// finding it (left by an interrupted one) knows it as its own.
	certManagerLabel = "meshinit.io/e2e"
)

// certManagerKinds are the kinds of cert-manager's chart StartCertManager
// applies: its CRDs and the identities its components run as. Its
// Deployments, Services, webhook configurations and hooks are left out: the
// controllers run as processes here, and its webhook does not run.
var certManagerKinds = map[string]bool{
	"CustomResourceDefinition": true, "ServiceAccount": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true,
}

// CertManager is cert-manager's controller and cainjector (hack/cert-manager:
// cert-manager's own controllers, built from its Go packages) running on this
// machine against the cluster, each as the ServiceAccount cert-manager's
// chart gives it.
type CertManager struct {
	// Version is the version of cert-manager running.
	Version string
	// Controller and CAInjector are the ServiceAccounts they run as
	// (system:serviceaccount:cert-manager:<name>).
	Controller, CAInjector string

	c         *Cluster
	manifests string // what was applied, deleted by Stop
	dir       string // kubeconfigs and logs
	procs     []*process
}

// process is a running command and its log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// StartCertManager builds hack/cert-manager with hack/cert-manager/build.sh
// (root is the repository's root), renders the Helm chart of that
// cert-manager version with its CRDs, applies the CRDs, ServiceAccounts and
// RBAC, and starts the controller and the cainjector, each with a token of
// its ServiceAccount. It refuses a cluster whose cert-manager CRDs it did
// not create (an installed cert-manager). Stop undoes it all.
func (c *Cluster) StartCertManager(ctx context.Context, root string, logf func(string, ...any)) (_ *CertManager, err error) {
	build := exec.CommandContext(ctx, filepath.Join(root, "hack", "cert-manager", "build.sh"))
	build.Stderr = os.Stderr
	out, err := build.Output()
	if err != nil {
		return nil, fmt.Errorf("hack/cert-manager/build.sh: %w", err)
	}
	cache := strings.TrimSpace(string(out))
	m := &CertManager{
		Version:    strings.TrimPrefix(filepath.Base(cache), "cert-manager-"),
		Controller: "cert-manager", CAInjector: "cert-manager-cainjector",
		c: c,
	}
	found, err := c.Kubectl(ctx, "", "get", "crd", "certificates.cert-manager.io", "--ignore-not-found",
		"-o", "jsonpath={.metadata.name}/{.metadata.labels."+strings.ReplaceAll(certManagerLabel, ".", `\.`)+"}")
	if err != nil {
		return nil, err
	}
	if found != "" && found != "certificates.cert-manager.io/cert-manager" {
		return nil, &Unavailable{"cert-manager is installed on this cluster: the test runs its own (cert-manager " + m.Version + ") and does not replace it"}
	}
	if m.manifests, err = certManagerManifests(filepath.Join(cache, "chart")); err != nil {
		return nil, err
	}
	if m.dir, err = os.MkdirTemp("", "meshinit-e2e-cert-manager-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, m.Stop(context.Background()))
		}
	}()
	if _, err := c.Apply(ctx, Namespace(CertManagerNamespace, nil)); err != nil {
		return nil, err
	}
	if _, err := c.Apply(ctx, m.manifests); err != nil {
		return nil, err
	}
	bin := filepath.Join(cache, "bin", "cert-manager")
	for _, p := range []struct{ sa, command string }{
		{m.Controller, "controller"}, {m.CAInjector, "cainjector"},
	} {
		kubeconfig, err := m.kubeconfigAs(ctx, p.sa)
		if err != nil {
			return nil, err
		}
		args := []string{p.command, "--kubeconfig", kubeconfig}
		if p.command == "controller" {
			args = append(args, "--cluster-resource-namespace", CertManagerNamespace)
		}
		if err := m.start(p.command, bin, args...); err != nil {
			return nil, err
		}
	}
	logf("cert-manager %s: controller and cainjector running (logs in %s)", m.Version, m.dir)
	return m, nil
}

// certManagerManifests renders cert-manager's chart in dir (CRDs on) and
// returns the objects of certManagerKinds, labelled, as one YAML stream.
func certManagerManifests(dir string) (string, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return "", fmt.Errorf("loading cert-manager's chart: %w", err)
	}
	files, err := charts.RenderChart(ch, charts.Options{
		ReleaseName: certManagerRelease, Namespace: CertManagerNamespace,
		Values: map[string]any{"crds": map[string]any{"enabled": true}},
	})
	if err != nil {
		return "", fmt.Errorf("rendering cert-manager's chart: %w", err)
	}
	var docs []string
	for name, f := range files {
		if !strings.HasSuffix(name, ".yaml") { // NOTES.txt, helpers
			continue
		}
		objs, err := charts.Decode(f)
		if err != nil {
			return "", fmt.Errorf("cert-manager's chart: %s: %w", name, err)
		}
		for _, o := range objs {
			if !certManagerKinds[o.GetKind()] || o.GetAnnotations()["helm.sh/hook"] != "" {
				continue
			}
			labelled(o)
			doc, err := yaml.Marshal(o.Object)
			if err != nil {
				return "", err
			}
			docs = append(docs, string(doc))
		}
	}
	if len(docs) == 0 {
		return "", errors.New("cert-manager's chart rendered none of its CRDs and RBAC")
	}
	return strings.Join(docs, "---\n"), nil
}

func labelled(o *unstructured.Unstructured) {
	labels := o.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[certManagerLabel] = "cert-manager"
	o.SetLabels(labels)
}

// kubeconfigAs writes a kubeconfig for the cluster with a token of the
// ServiceAccount sa in cert-manager's namespace.
func (m *CertManager) kubeconfigAs(ctx context.Context, sa string) (string, error) {
	token, err := m.c.Kubectl(ctx, "", "-n", CertManagerNamespace, "create", "token", sa, "--duration", "6h")
	if err != nil {
		return "", err
	}
	admin, err := clientcmd.LoadFromFile(m.c.Kubeconfig)
	if err != nil {
		return "", err
	}
	current, ok := admin.Contexts[admin.CurrentContext]
	if !ok || admin.Clusters[current.Cluster] == nil {
		return "", fmt.Errorf("%s: no cluster in its current context %q", m.c.Kubeconfig, admin.CurrentContext)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = admin.Clusters[current.Cluster]
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[sa] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: sa}
	cfg.CurrentContext = sa
	path := filepath.Join(m.dir, sa+".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// start runs bin with args, its output in <name>.log.
func (m *CertManager) start(name, bin string, args ...string) error {
	p := &process{name: name, log: filepath.Join(m.dir, name+".log"), done: make(chan struct{})}
	log, err := os.Create(p.log)
	if err != nil {
		return err
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting cert-manager %s: %w", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		log.Close()
		close(p.done)
	}()
	m.procs = append(m.procs, p)
	return nil
}

// Exited says which of its processes have exited, and how.
func (m *CertManager) Exited() error {
	var errs []error
	for _, p := range m.procs {
		select {
		case <-p.done:
			errs = append(errs, fmt.Errorf("cert-manager %s exited: %v", p.name, p.cmd.ProcessState))
		default:
		}
	}
	return errors.Join(errs...)
}

// Logs is the end of each process's log, for a failure's message.
func (m *CertManager) Logs() string {
	var b strings.Builder
	for _, p := range m.procs {
		data, _ := os.ReadFile(p.log)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		lines = lines[max(0, len(lines)-30):]
		fmt.Fprintf(&b, "--- cert-manager %s (%s), last %d lines:\n%s\n", p.name, p.log, len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}

// Stop stops the processes (SIGTERM, then SIGKILL after 15 s) and deletes
// what StartCertManager applied, the CRDs and with them every cert-manager
// object, and cert-manager's namespace. The logs are kept when it fails.
func (m *CertManager) Stop(ctx context.Context) error {
	var errs []error
	for _, p := range m.procs {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
			errs = append(errs, fmt.Errorf("cert-manager %s did not stop on SIGTERM within 15 s", p.name))
		}
	}
	if m.manifests != "" {
		if _, err := m.c.Kubectl(ctx, m.manifests, "delete", "--ignore-not-found", "--timeout", "2m", "-f", "-"); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := m.c.Kubectl(ctx, "", "delete", "namespace", CertManagerNamespace, "--ignore-not-found", "--wait=false"); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 && m.dir != "" {
		errs = append(errs, os.RemoveAll(m.dir))
	}
	return errors.Join(errs...)
}

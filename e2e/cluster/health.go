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

package cluster

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// pollInterval is how often Up checks whether what it waits for is there.
const pollInterval = 100 * time.Millisecond

// newClient returns a client of the cluster's API server, from the admin
// kubeconfig. A request gives up after 5 s, so that a poll tries again, and
// is not rate-limited: the poll paces them.
func newClient(o *Options) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig())
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 5 * time.Second
	cfg.QPS = -1
	return kubernetes.NewForConfig(cfg)
}

// apiServerReady returns nil once the API server answers /readyz.
func apiServerReady(ctx context.Context, cs kubernetes.Interface) error {
	_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err
}

// ready returns nil once the cluster can run a test's pods: the API server
// is ready, the node is Ready, the default namespace has its ServiceAccount
// and root CA ConfigMap (which every pod mounts), and kube-proxy has synced.
// Otherwise it says what is missing.
func ready(ctx context.Context, o *Options, cs kubernetes.Interface) error {
	if err := apiServerReady(ctx, cs); err != nil {
		return err
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !nodeReady(node) {
		return fmt.Errorf("node %s is not Ready", o.Name)
	}
	if _, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return err
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{}); err != nil {
		return err
	}
	return httpOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/healthz", o.Ports.ProxyHealthz))
}

// nodeReady says whether node's Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// httpOK returns nil once a plain GET of url answers 200.
func httpOK(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

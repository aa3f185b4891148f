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

package testkit

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Namespace creates ns through cfg and waits until its default
// ServiceAccount exists, so pods can be created there at once: the
// ServiceAccount admission plugin refuses a pod whose ServiceAccount is
// missing, and the serviceaccount controller makes the default one a moment
// after the namespace (as in a cluster).
func Namespace(t testing.TB, cfg *rest.Config, ns *corev1.Namespace) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", ns.Name, err)
	}
	WaitForServiceAccount(t, cs, ns.Name)
}

// WaitForServiceAccount waits until namespace has its default
// ServiceAccount (see [Namespace]), for namespaces something else created
// (Helm's --create-namespace).
func WaitForServiceAccount(t testing.TB, cs kubernetes.Interface, namespace string) {
	t.Helper()
	Eventually(t, 30*time.Second, fmt.Sprintf("the default ServiceAccount of namespace %s (made by kube-controller-manager's serviceaccount controller)", namespace), func() error {
		_, err := cs.CoreV1().ServiceAccounts(namespace).Get(context.Background(), "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("not yet")
		}
		return err
	})
}

// runs counts RunName's calls for each name in this process.
var runs = struct {
	sync.Mutex
	of map[string]int
}{of: map[string]int{}}

// RunName is name the first time it is asked for in this process and
// name-N the Nth time, so that go test -count=N runs each test anew on an
// API server its package's tests share: a namespace of an earlier run stays
// there (no namespace controller finalizes it, even deleted), with its
// objects, and so do cluster-scoped objects named after it. A test names
// its namespace with it once and uses that name everywhere, in the
// messages it expects too.
func RunName(name string) string {
	runs.Lock()
	defer runs.Unlock()
	runs.of[name]++
	if n := runs.of[name]; n > 1 {
		return fmt.Sprintf("%s-%d", name, n)
	}
	return name
}

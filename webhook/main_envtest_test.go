package command

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/meshinit/meshinit/charts"
	"github.com/meshinit/meshinit/internal/poll"
	"github.com/meshinit/meshinit/webhook"
)

// TestMainAgainstAPIServer runs the command as the chart does (its config
// file, self-managed certificates) against a real kube-apiserver, creates a
// pod in an opted-in namespace, and stops the command.
func TestMainAgainstAPIServer(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is unset: no kube-apiserver and etcd to test against (make tools-envtest builds them; make test sets it)")
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Stop()
	user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	kubeconfigPath := write("kubeconfig", kubeconfig)

	ctx := context.Background()
	client := kubernetes.NewForConfigOrDie(cfg)
	for name, labels := range map[string]map[string]string{"meshinit-system": nil, "app": {webhook.NamespaceLabel: "enabled"}} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	port, probes := freePort(t), freePort(t)
	var configFile string
	objs, err := charts.Objects(charts.Options{Namespace: "meshinit-system"}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch {
		case o.GetKind() == "ConfigMap" && o.GetName() == "meshinit-webhook":
			data := o.Object["data"].(map[string]any)["config.yaml"].(string)
			configFile = write("config.yaml", []byte(data))
		case o.GetKind() == "MutatingWebhookConfiguration":
			var mwc admissionregistrationv1.MutatingWebhookConfiguration
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &mwc); err != nil {
				t.Fatal(err)
			}
			for i := range mwc.Webhooks {
				cc := &mwc.Webhooks[i].ClientConfig
				cc.URL, cc.Service = ptr.To(fmt.Sprintf("https://localhost:%d%s", port, *cc.Service.Path)), nil
			}
			if _, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &mwc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() {
		done <- Main(runCtx, []string{
			"--kubeconfig=" + kubeconfigPath,
			"--config=" + configFile,
			"--namespace=meshinit-system",
			fmt.Sprintf("--port=%d", port),
			"--metrics-bind-address=0",
			fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probes),
			"--shutdown-delay=100ms",
			"--log-format=text",
			// self-managed, for a Service named localhost: the name the API
			// server dials here.
			"--cert-dir=" + filepath.Join(dir, "certs"),
			"--cert-secret=meshinit-webhook-tls",
			"--service-name=localhost",
			"--service-namespace=meshinit-system",
			"--webhook-config-name=meshinit",
		}, os.Stdout, os.Stderr)
	}()
	err = poll.Until(ctx, 200*time.Millisecond, 90*time.Second, func(context.Context) error {
		select {
		case code := <-done:
			t.Fatalf("Main exited with %d before ready", code)
		default:
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probes))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("not ready within 90s: %v", err)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
	stored, err := client.CoreV1().Pods("app").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.Spec.InitContainers) != 1 || stored.Spec.InitContainers[0].Name != webhook.ContainerName {
		t.Errorf("stored pod's init containers: %+v", stored.Spec.InitContainers)
	}
	stop()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("Main exited with %d after its context ended", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("Main did not return within a minute of its context ending")
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

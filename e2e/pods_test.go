package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// appPod is the pod under test: the app listening on 8080 and 8081, and
// the test proxy as two containers running as the proxy UID, one on the
// outbound port 15001 and one on the inbound port 15006, each answering
// with its name and the original destination.
func appPod(name string, labels, annotations map[string]string) string {
	return pod(name, labels, annotations,
		container("app", nil, "-listen", ":8080,:8081", "-name", "app"),
		container("proxy-out", proxyUser, "-listen", ":15001", "-name", "proxy-out"),
		container("proxy-in", proxyUser, "-listen", ":15006", "-name", "proxy-in"),
	)
}

// plainPod runs the toolbox alone, serving on 8080 as name: a client to
// exec /dial in, or a pod to see admitted or not.
func plainPod(name string, labels, annotations map[string]string) string {
	return pod(name, labels, annotations, container(name, nil, "-listen", ":8080", "-name", name))
}

var proxyUser = map[string]any{"runAsUser": 1337, "runAsGroup": 1337}

func container(name string, securityContext map[string]any, args ...string) map[string]any {
	c := map[string]any{"name": name, "image": toolboxRef, "imagePullPolicy": "Never", "args": args}
	if securityContext != nil {
		c["securityContext"] = securityContext
	}
	return c
}

func pod(name string, labels, annotations map[string]string, containers ...map[string]any) string {
	return manifest(map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "labels": labels, "annotations": annotations},
		"spec":     map[string]any{"terminationGracePeriodSeconds": 1, "containers": containers},
	})
}

func manifest(o map[string]any) string {
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// podIP waits for the pod to be Ready and returns its IP.
func (e *env) ready(t testing.TB, ctx context.Context, ns, name string) string {
	t.Helper()
	if _, err := e.kubectl(ctx, "", "-n", ns, "wait", "pod/"+name, "--for", "condition=Ready", "--timeout", "180s"); err != nil {
		status, _ := e.kubectl(ctx, "", "-n", ns, "get", "pod", name, "-o", "jsonpath={.status}")
		t.Fatalf("%v\nstatus: %s", err, status)
	}
	return e.must(t, ctx, "-n", ns, "get", "pod", name, "-o", "jsonpath={.status.podIP}")
}

// initContainers lists the names of a pod's init containers.
func (e *env) initContainers(t testing.TB, ctx context.Context, ns, name string) []string {
	t.Helper()
	return strings.Fields(e.must(t, ctx, "-n", ns, "get", "pod", name, "-o", "jsonpath={.spec.initContainers[*].name}"))
}

// dial runs /dial in a pod's container and returns the line addr answered
// with.
func (e *env) dial(t testing.TB, ctx context.Context, ns, pod, container, addr string) string {
	t.Helper()
	out, err := e.kubectl(ctx, "", "-n", ns, "exec", pod, "-c", container, "--", "/dial", "-timeout", "20s", addr)
	if err != nil {
		t.Fatalf("dial %s from %s/%s: %v", addr, pod, container, err)
	}
	return strings.TrimPrefix(out, addr+": ")
}

// createNamespace creates a namespace with labels, deleted when the test
// ends.
func (e *env) createNamespace(t testing.TB, ctx context.Context, prefix string, labels map[string]string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1e6)
	e.apply(t, ctx, manifest(map[string]any{
		"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": name, "labels": labels},
	}))
	t.Cleanup(func() { _, _ = e.kubectl(context.Background(), "", "delete", "namespace", name, "--wait=false") })
	return name
}

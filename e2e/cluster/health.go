package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// api is a minimal client of the cluster's API server: enough to wait for
// readiness without pulling client-go into the caller.
type api struct {
	o      *Options
	token  string
	client *http.Client
}

func newAPI(o *Options, token string) (*api, error) {
	ca, err := os.ReadFile(o.pkiPath("ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s: no certificate", o.pkiPath("ca.crt"))
	}
	return &api{o: o, token: token, client: &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}}, nil
}

// get fetches path from the API server; with into non-nil it decodes the
// JSON body. It returns the HTTP status.
func (a *api) get(ctx context.Context, path string, into any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.o.apiServerURL()+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode == http.StatusOK && into != nil {
		return resp.StatusCode, json.Unmarshal(body, into)
	}
	return resp.StatusCode, nil
}

// ok says whether GET path answers 200.
func (a *api) ok(ctx context.Context, path string) bool {
	status, err := a.get(ctx, path, nil)
	return err == nil && status == http.StatusOK
}

// nodeReady says whether the node's Ready condition is True.
func (a *api) nodeReady(ctx context.Context) bool {
	var node struct {
		Status struct {
			Conditions []struct{ Type, Status string }
		}
	}
	if status, err := a.get(ctx, "/api/v1/nodes/"+a.o.Name, &node); err != nil || status != http.StatusOK {
		return false
	}
	for _, c := range node.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// ready says whether the cluster can run a test's pods now: the API server
// is ready, the node is Ready, the default namespace has its ServiceAccount
// and root CA ConfigMap (which every pod mounts), and kube-proxy has synced.
func (a *api) ready(ctx context.Context) bool {
	return a.ok(ctx, "/readyz") && a.nodeReady(ctx) &&
		a.ok(ctx, "/api/v1/namespaces/default/serviceaccounts/default") &&
		a.ok(ctx, "/api/v1/namespaces/default/configmaps/kube-root-ca.crt") &&
		httpOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/healthz", a.o.Ports.ProxyHealthz))
}

// httpOK says whether a plain GET of url answers 200.
func httpOK(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// poll calls cond every 100 ms until it is true, ctx ends, or timeout
// passes; the error names what was awaited.
func poll(ctx context.Context, what string, timeout time.Duration, cond func(context.Context) bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}

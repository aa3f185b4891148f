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

package webhook_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/meshinit/meshinit/webhook"
)

// TestRolloutLosesNoReview replaces replicas of the webhook, each a process
// of its own, one after another as a Deployment's rollout does (a new one
// ready, then an old one taken out of the Service and sent SIGTERM), while
// an API server's client (client-go's rest client and its pool of kept-alive
// connections) posts reviews back to back through a Service as kube-proxy
// makes one: each new connection goes to a replica that is ready, and a
// connection stays with its replica. Every review must be answered: the
// API server does not retry a review whose connection was closed under it,
// and with failurePolicy Fail the pod is refused (issue 21 saw one create
// in 1,800 refused this way during `kubectl rollout restart`).
func TestRolloutLosesNoReview(t *testing.T) {
	c := startCluster(t)
	createNamespace(t, c.admin, "app", map[string]string{webhook.NamespaceLabel: "enabled"})
	dir := t.TempDir()
	ca := newCA(t)
	ca.issue(t, dir)
	start := func() *replica { return c.replica(t, dir, ca, "--shutdown-delay=1s") }
	replicas := []*replica{start(), start()}
	svc := newService(t)
	svc.route(replicas...)

	const restarts, workers = 4, 8
	r := &replica{server: &server{port: svc.port}, caPEM: replicas[0].caPEM}
	apiServer := r.apiServerClient(t)
	review := reviewOf(t, "web", nil)
	var answered, failed atomic.Int64
	var mu sync.Mutex
	failures := map[string]int{}
	ctx, stop := context.WithCancel(context.Background())
	var load sync.WaitGroup
	for range workers {
		load.Go(func() {
			for ctx.Err() == nil {
				rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				out, err := apiServer.Post().AbsPath("/inject").SetHeader("Content-Type", "application/json").Body(review).Do(rctx).Raw()
				cancel()
				if f := reviewFailure(out, err); f != "" {
					failed.Add(1)
					mu.Lock()
					failures[f]++
					mu.Unlock()
				} else {
					answered.Add(1)
				}
			}
		})
	}
	for i := range restarts {
		time.Sleep(time.Second)
		next := start()
		old := replicas[0]
		replicas = append(replicas[1:], next)
		// The endpoint goes and SIGTERM comes at about the same time.
		svc.route(replicas...)
		if err := old.process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-old.exited:
			old.exited <- err
			if err != nil {
				t.Errorf("replica %d exited: %v", i, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("replica %d did not exit within a minute of SIGTERM", i)
		}
	}
	time.Sleep(time.Second)
	stop()
	load.Wait()
	t.Logf("%d restarts: %d reviews answered, %d failed %v; %d connections through the Service", restarts, answered.Load(), failed.Load(), failures, svc.conns.Load())
	if failed.Load() > 0 {
		t.Errorf("%d of %d reviews failed during the rollout: %v", failed.Load(), failed.Load()+answered.Load(), failures)
	}
	if answered.Load() < 100 {
		t.Errorf("only %d reviews answered", answered.Load())
	}
}

// service is a Service's virtual address as kube-proxy serves it: each
// new connection goes to one of the ready endpoints (round robin), and
// stays there.
type service struct {
	port      int
	mu        sync.Mutex
	endpoints []int
	next      int
	conns     atomic.Int64
}

func newService(t *testing.T) *service {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s := &service{port: l.Addr().(*net.TCPAddr).Port}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go s.forward(c)
		}
	}()
	return s
}

// route makes rs the ready endpoints.
func (s *service) route(rs ...*replica) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endpoints = nil
	for _, r := range rs {
		s.endpoints = append(s.endpoints, r.port)
	}
}

// forward connects c to an endpoint and copies both ways until either
// side closes.
func (s *service) forward(c net.Conn) {
	defer c.Close()
	s.mu.Lock()
	port := s.endpoints[s.next%len(s.endpoints)]
	s.next++
	s.mu.Unlock()
	s.conns.Add(1)
	b, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return // as a connection to a pod that is gone: refused
	}
	defer b.Close()
	done := make(chan struct{}, 2)
	for _, pair := range [][2]net.Conn{{b, c}, {c, b}} {
		go func() {
			_, _ = io.Copy(pair[0], pair[1])
			if tc, ok := pair[0].(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			}
			done <- struct{}{}
		}()
	}
	<-done
	<-done
}

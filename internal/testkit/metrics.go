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
	"bufio"
	"context"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
)

// MetricSum reads the API server's /metrics as cs and returns the sum of the
// series of metric (a full series name, such as
// apiserver_admission_webhook_admission_duration_seconds_count) whose labels
// contain every one of labels (each as written in the exposition, e.g.
// `name="ServiceAccount"`).
func MetricSum(t testing.TB, cs kubernetes.Interface, metric string, labels ...string) float64 {
	t.Helper()
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("reading the API server's metrics: %v", err)
	}
	var sum float64
	s := bufio.NewScanner(strings.NewReader(string(raw)))
	s.Buffer(nil, 1<<20)
series:
	for s.Scan() {
		series, value, ok := strings.Cut(s.Text(), "} ")
		if !ok || !strings.HasPrefix(series, metric+"{") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(series, l) {
				continue series
			}
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			sum += v
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return sum
}

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
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// ApplyPatch is applyPatch, for the tests of package webhook_test.
var ApplyPatch = applyPatch

// TrustMain is trustMain, the trust-redirector subcommand Main runs, for
// the tests of package webhook_test to run with their own API client.
var TrustMain = trustMain

// CorpusCase is one case of testdata/pods (see podCase) as the tests of
// package webhook_test run it through an API server.
type CorpusCase struct {
	Name            string
	Namespace       string
	NamespaceLabels map[string]string
	// Inject is the case's configuration (testConfig and its own) as the
	// chart's inject values.
	Inject map[string]any
	// Pod is the pod as the case reviews it: with Reinvoke, the pod the
	// webhook injected (with the case's configuration, in-process) with
	// those changes.
	Pod []byte
}

// Corpus loads every case of testdata/pods.
func Corpus(t *testing.T) []CorpusCase {
	t.Helper()
	files, err := filepath.Glob("testdata/pods/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases in testdata/pods: %v", err)
	}
	var out []CorpusCase
	for _, file := range files {
		if strings.HasSuffix(file, ".golden.yaml") {
			continue
		}
		pc, c := loadCase(t, file)
		pod, err := json.Marshal(pc.Pod)
		if err != nil {
			t.Fatal(err)
		}
		if pc.Reinvoke != nil {
			pod = reinvoked(t, NewHandler(c, staticLabels(pc.NamespaceLabels)), pc, pod)
		}
		// testConfig's image and namespace (the release's, where the
		// chart's webhook runs), the redirect defaults and no resources,
		// then the case's own.
		i := strings.LastIndex(c.Image, ":")
		inject := map[string]any{"image": map[string]any{"repository": c.Image[:i], "tag": c.Image[i+1:]}, "resources": map[string]any{}}
		for k, v := range pc.Config {
			inject[k] = v
		}
		out = append(out, CorpusCase{
			Name:            strings.TrimSuffix(filepath.Base(file), ".yaml"),
			Namespace:       pc.Namespace,
			NamespaceLabels: pc.NamespaceLabels,
			Inject:          inject,
			Pod:             pod,
		})
	}
	return out
}

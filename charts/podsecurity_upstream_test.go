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

package charts_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"
)

// The upstream side of the PodSecurity guard's tests: the PodSecurity
// admission plugin's own pod fixtures and its own checks, from
// k8s.io/pod-security-admission at the version go.mod requires.

// podSecurityLabel is the namespace label that opts a namespace in to the
// guard, with the level as its value.
const podSecurityLabel = "meshinit.io/pod-security"

// levels the guard enforces.
var levels = []api.Level{api.LevelBaseline, api.LevelRestricted}

// A fixture is one pod of upstream's fixtures: its test package generates
// them per check, level and version (test/fixtures_*.go) and keeps them, as
// its TestFixtures checks, in test/testdata/<level>/v1.<minor>/<pass|fail>.
type fixture struct {
	// name is the fixture's path under testdata, without .yaml (e.g.
	// "baseline/v1.37/fail/hostpathvolumes0").
	name string
	pod  *corev1.Pod
}

// level, version and pass are what the fixture's path says: at that level
// and version upstream admits it (pass) or refuses it.
func (f fixture) level() api.Level { return api.Level(strings.Split(f.name, "/")[0]) }
func (f fixture) version() string  { return strings.Split(f.name, "/")[1] }
func (f fixture) pass() bool       { return strings.Split(f.name, "/")[2] == "pass" }

var (
	fixturesOnce sync.Once
	fixturesRoot string
	fixturesAll  []fixture
	fixturesErr  error
)

// upstreamFixtures are every fixture of every level and version, each pod
// once (the first path that has it: the same pod recurs across versions).
func upstreamFixtures(t testing.TB) []fixture {
	t.Helper()
	fixturesOnce.Do(func() { fixturesRoot, fixturesAll, fixturesErr = readFixtures() })
	if fixturesErr != nil {
		t.Fatal(fixturesErr)
	}
	return fixturesAll
}

// readFixtures reads upstream's testdata from the module cache.
func readFixtures() (root string, fixtures []fixture, err error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/pod-security-admission").Output()
	if err != nil {
		return "", nil, fmt.Errorf("finding k8s.io/pod-security-admission: %w", err)
	}
	root = filepath.Join(strings.TrimSpace(string(out)), "test", "testdata")
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var p corev1.Pod
		if err := yaml.UnmarshalStrict(data, &p); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		p.Name = ""
		key, _ := yaml.Marshal(&p)
		if seen[string(key)] {
			return nil
		}
		seen[string(key)] = true
		defaultVolumes(&p)
		p.Name = "fixture"
		p.APIVersion, p.Kind = "v1", "Pod"
		rel, _ := filepath.Rel(root, strings.TrimSuffix(path, ".yaml"))
		fixtures = append(fixtures, fixture{name: filepath.ToSlash(rel), pod: &p})
		return nil
	})
	if err == nil && len(fixtures) == 0 {
		err = fmt.Errorf("no fixtures under %s", root)
	}
	return root, fixtures, err
}

// fixturesAt are the fixtures of one level and version as upstream lays
// them out, pass and fail (its tests run a version's directory at that
// version), duplicates included.
func fixturesAt(t testing.TB, level api.Level, version string) []fixture {
	t.Helper()
	upstreamFixtures(t)
	var fixtures []fixture
	for _, verdict := range []string{"pass", "fail"} {
		files, _ := filepath.Glob(filepath.Join(fixturesRoot, string(level), version, verdict, "*.yaml"))
		if len(files) == 0 {
			t.Fatalf("no %s fixtures of %s %s under %s", verdict, level, version, fixturesRoot)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var p corev1.Pod
			if err := yaml.UnmarshalStrict(data, &p); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			defaultVolumes(&p)
			p.Name = "fixture"
			p.APIVersion, p.Kind = "v1", "Pod"
			name := strings.Join([]string{string(level), version, verdict, strings.TrimSuffix(filepath.Base(f), ".yaml")}, "/")
			fixtures = append(fixtures, fixture{name: name, pod: &p})
		}
	}
	return fixtures
}

// defaultVolumes gives a volume without a source an emptyDir, as the API
// server defaults it (SetDefaults_Volume in k8s.io/kubernetes
// pkg/apis/core/v1): upstream's fixtures rely on it (restrictedvolumes0),
// and its tests send them through an API server.
func defaultVolumes(p *corev1.Pod) {
	for i, v := range p.Spec.Volumes {
		if v.VolumeSource == (corev1.VolumeSource{}) {
			p.Spec.Volumes[i].EmptyDir = &corev1.EmptyDirVolumeSource{}
		}
	}
}

// minimalPod is upstream's minimal valid pod of level at the newest
// version (its fixture "base"), which its other fixtures change.
func minimalPod(t testing.TB, level api.Level) *corev1.Pod {
	t.Helper()
	for _, f := range fixturesAt(t, level, newestFixtures) {
		if strings.HasSuffix(f.name, "/pass/base") {
			return f.pod
		}
	}
	t.Fatalf("no minimal pod of %s %s", level, newestFixtures)
	return nil
}

// newestFixtures is the version of upstream's newest fixtures: the
// policy version the guard implements.
const newestFixtures = "v1.37"

var (
	evaluatorOnce sync.Once
	evaluator     policy.Evaluator
)

// upstreamVerdict is what upstream's checks decide for p at level, at the
// newest policy version: the reasons it refuses p, none when it admits it.
func upstreamVerdict(t testing.TB, level api.Level, p *corev1.Pod) []string {
	t.Helper()
	return upstreamAt(api.LevelVersion{Level: level, Version: api.MajorMinorVersion(1, 37)}, p)
}

// upstreamAt is upstream's reasons for refusing p at a level and version.
func upstreamAt(lv api.LevelVersion, p *corev1.Pod) (reasons []string) {
	evaluatorOnce.Do(func() {
		e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
		if err != nil {
			panic(err) // upstream's own checks
		}
		evaluator = e
	})
	for _, r := range evaluator.EvaluatePod(lv, &p.ObjectMeta, &p.Spec) {
		if !r.Allowed {
			reasons = append(reasons, r.ForbiddenReason)
		}
	}
	return reasons
}

// TestUpstreamFixturesAreUpstreams: the fixtures read here are upstream's
// at the newest version, as its own checks decide them (so the guard's
// tests compare with upstream's verdicts, never with a copy of them).
func TestUpstreamFixturesAreUpstreams(t *testing.T) {
	for _, level := range levels {
		fixtures := fixturesAt(t, level, newestFixtures)
		for _, f := range fixtures {
			if refused := upstreamVerdict(t, level, f.pod) != nil; refused == f.pass() {
				t.Errorf("%s: upstream's checks refuse it: %v", f.name, refused)
			}
		}
	}
	t.Logf("%d distinct fixtures across levels and versions", len(upstreamFixtures(t)))
}

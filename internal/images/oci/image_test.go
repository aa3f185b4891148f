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

package oci

import (
	"slices"
	"testing"
	"time"
)

func TestNewImageConfig(t *testing.T) {
	p, err := LookupPlatform("arm64")
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLayer([]File{RegularFile("/hello", 0o755, []byte("hi"))}, LayerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	img, err := NewImage(Config{
		Platform:   p,
		Entrypoint: []string{"/hello"},
		Env:        []string{"A=b"},
		User:       "0:0",
		Labels:     map[string]string{LabelVersion: "v1"},
	}, l)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "arm64" || cf.Variant != "v8" {
		t.Errorf("platform %s/%s/%s, want linux/arm64/v8", cf.OS, cf.Architecture, cf.Variant)
	}
	if !cf.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("created %v, want the epoch", cf.Created)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/hello"}) || cf.Config.User != "0:0" {
		t.Errorf("entrypoint %q user %q", cf.Config.Entrypoint, cf.Config.User)
	}
	if want := []string{"PATH=" + DefaultPath, "A=b"}; !slices.Equal(cf.Config.Env, want) {
		t.Errorf("env %q, want %q", cf.Config.Env, want)
	}
	if cf.Config.Labels[LabelVersion] != "v1" {
		t.Errorf("labels %v", cf.Config.Labels)
	}
	if len(cf.RootFS.DiffIDs) != 1 || len(cf.History) != 1 {
		t.Errorf("rootfs %v history %v, want one layer", cf.RootFS.DiffIDs, cf.History)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != "application/vnd.oci.image.manifest.v1+json" || m.Config.MediaType != "application/vnd.oci.image.config.v1+json" {
		t.Errorf("media types %q / %q, want OCI", m.MediaType, m.Config.MediaType)
	}

	again, err := NewImage(Config{Platform: p, Entrypoint: []string{"/hello"}, Env: []string{"A=b"}, User: "0:0",
		Labels: map[string]string{LabelVersion: "v1"}}, l)
	if err != nil {
		t.Fatal(err)
	}
	if digest(t, img) != digest(t, again) {
		t.Error("the same inputs gave another digest")
	}
	if _, err := NewImage(Config{}, l); err == nil {
		t.Error("no platform: no error")
	}
}

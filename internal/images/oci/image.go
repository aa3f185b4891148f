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
	"errors"
	"fmt"
	"maps"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// DefaultPath is the PATH an image gets unless its Config sets Env's PATH.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Well-known label keys (OCI image annotations, used as config labels).
const (
	LabelSource      = "org.opencontainers.image.source"
	LabelVersion     = "org.opencontainers.image.version"
	LabelRevision    = "org.opencontainers.image.revision"
	LabelTitle       = "org.opencontainers.image.title"
	LabelDescription = "org.opencontainers.image.description"
	LabelLicenses    = "org.opencontainers.image.licenses"
)

// Config says what an image is for and how it runs. The zero value of each
// field means its default.
type Config struct {
	// Platform the image's programs are built for. Required.
	Platform Platform
	// Entrypoint is the program and its first arguments.
	Entrypoint []string
	// Cmd are default arguments after Entrypoint.
	Cmd []string
	// Env is "NAME=value" entries. Default: PATH=DefaultPath; a given list
	// without PATH gets it added first.
	Env []string
	// User is "uid[:gid]" or a name. Default: "" (root, as the runtime
	// decides).
	User string
	// WorkingDir is the working directory. Default: "/" as the runtime
	// decides.
	WorkingDir string
	// Labels, e.g. LabelSource and LabelVersion.
	Labels map[string]string
	// Created is the image's creation time. Default: the Unix epoch, so
	// builds are reproducible (see SourceDateEpoch).
	Created time.Time
}

// NewImage assembles an OCI image (OCI manifest and config media types)
// from layers, bottom first.
func NewImage(cfg Config, layers ...v1.Layer) (v1.Image, error) {
	if cfg.Platform.GOARCH == "" {
		return nil, errors.New("image: Platform is required")
	}
	if cfg.Created.IsZero() {
		cfg.Created = time.Unix(0, 0)
	}
	created := v1.Time{Time: cfg.Created.UTC()}

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	adds := make([]mutate.Addendum, 0, len(layers))
	for _, l := range layers {
		// "ociimage" is this package's old name; it stays in the history so
		// that images keep their digests.
		adds = append(adds, mutate.Addendum{Layer: l, History: v1.History{Created: created, CreatedBy: "meshinit ociimage"}})
	}
	img, err := mutate.Append(img, adds...)
	if err != nil {
		return nil, fmt.Errorf("image: append layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: config: %w", err)
	}
	cf = cf.DeepCopy()
	p := cfg.Platform.OCI()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = created
	cf.Config = v1.Config{
		Entrypoint: cfg.Entrypoint,
		Cmd:        cfg.Cmd,
		Env:        withPath(cfg.Env),
		User:       cfg.User,
		WorkingDir: cfg.WorkingDir,
		Labels:     maps.Clone(cfg.Labels),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image: set config: %w", err)
	}
	return img, nil
}

func withPath(env []string) []string {
	for _, e := range env {
		if len(e) >= 5 && e[:5] == "PATH=" {
			return env
		}
	}
	return append([]string{"PATH=" + DefaultPath}, env...)
}

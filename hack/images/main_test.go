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

package main

import (
	"errors"
	"flag"
	"io"
	"os"
	"reflect"
	"runtime"
	"testing"

	"github.com/meshinit/meshinit/internal/images"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		want   images.Options
		plugin string
	}{
		{nil, images.Options{
			Archs: []string{runtime.GOARCH},
			Out:   "_output/images",
			Only:  images.Names(),
		}, ""},
		// What make images passes, and every other flag.
		{[]string{"-arch", "amd64, arm64,", "-version", "v1.2.3", "-push", "registry.example.com/meshinit",
			"-out", "/tmp/x", "-images", "webhook,test-app", "-refresh", "-v"}, images.Options{
			Archs:         []string{"amd64", "arm64"},
			Version:       "v1.2.3",
			Out:           "/tmp/x",
			Only:          []string{"webhook", "test-app"},
			Push:          "registry.example.com/meshinit",
			RefreshDebian: true,
			AptLog:        os.Stderr,
		}, ""},
		// What make plugin passes.
		{[]string{"-plugin", "_output/bin/kubectl-meshinit", "-version", "v1.2.3"}, images.Options{
			Archs:   []string{runtime.GOARCH},
			Version: "v1.2.3",
			Out:     "_output/images",
			Only:    images.Names(),
		}, "_output/bin/kubectl-meshinit"},
	} {
		got, plugin, err := parseFlags(tc.args, io.Discard)
		if err != nil {
			t.Errorf("parseFlags(%q): %v", tc.args, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) || plugin != tc.plugin {
			t.Errorf("parseFlags(%q) = %+v, %q; want %+v, %q", tc.args, got, plugin, tc.want, tc.plugin)
		}
	}
}

func TestParseFlagsErrors(t *testing.T) {
	if _, _, err := parseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
	for _, args := range [][]string{{"-arch"}, {"-nope"}, {"amd64"}} {
		if _, _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) succeeded", args)
		}
	}
}

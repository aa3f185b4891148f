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

package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"time"
)

// record is what Up remembers in StateDir/state.json, written after every
// step so that Down can undo a half-finished Up.
type record struct {
	// Options are those Up ran with (Logf aside).
	Options Options `json:"options"`
	// Processes Up started, in start order.
	Processes []proc `json:"processes"`
	// Sysctls holds the values of the kernel settings the cluster's
	// components may change, as they were before Up; Down restores them.
	Sysctls map[string]string `json:"sysctls"`
	// Created are paths outside StateDir that did not exist before Up and
	// that containerd or the kubelet create; Down removes them if they
	// hold nothing anymore.
	Created []string `json:"created"`
	// Ready is set once Up has seen the cluster ready.
	Ready bool `json:"ready"`
}

func (o *Options) recordFile() string { return o.path("state.json") }

// load reads the record; (nil, nil) when there is none.
func load(o *Options) (*record, error) {
	b, err := os.ReadFile(o.recordFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", o.recordFile(), err)
	}
	return &r, nil
}

func (r *record) save() error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	file := r.Options.recordFile()
	if err := os.WriteFile(file+".tmp", b, 0o600); err != nil {
		return err
	}
	return os.Rename(file+".tmp", file)
}

// find returns the recorded process named name.
func (r *record) find(name string) (proc, bool) {
	for _, p := range r.Processes {
		if p.Name == name {
			return p, true
		}
	}
	return proc{}, false
}

// lock serializes Up and Down of one cluster across processes (parallel
// test binaries, a developer's `localcluster down`). It is an abstract unix
// socket named after StateDir: the kernel releases it when its holder
// exits, and it leaves no file behind.
func lock(ctx context.Context, o *Options) (release func(), err error) {
	addr := &net.UnixAddr{Name: "@meshinit-e2e-cluster:" + o.StateDir, Net: "unix"}
	waited := false
	for {
		l, err := net.ListenUnix("unix", addr)
		if err == nil {
			return func() { l.Close() }, nil
		}
		if !waited {
			o.Logf("waiting for another Up or Down of %s to finish", o.StateDir)
			waited = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lock %s: %w (last: %v)", o.StateDir, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

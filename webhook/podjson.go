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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"

	jsoniter "github.com/json-iterator/go"
	corev1 "k8s.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"
)

// readPod reads the fields of a pod the webhook looks at (metadata name,
// generateName, namespace, labels, annotations; spec hostNetwork, the names
// of containers, init containers and volumes, and the whole of the init
// container named ContainerName and of the volume named TokenBlockVolume) from the pod's JSON in one pass that skips
// everything else, which keeps a review cheap: building a whole corev1.Pod
// costs several times more than the review's other work.
//
// The JSON has been checked already: admission.Webhook decodes the whole
// AdmissionReview before the handler runs. Like the API server, readPod
// matches keys case-sensitively and refuses a repeated key among those it
// reads, so the pod it returns is the document a patch applies to. Every
// string it returns is the one encoding/json (and so the API server's
// decoder) reads: invalid UTF-8 becomes U+FFFD, byte by byte.
func readPod(raw []byte) (*corev1.Pod, error) {
	it := podJSON.BorrowIterator(raw)
	defer podJSON.ReturnIterator(it)
	p := &corev1.Pod{}
	r := podReader{it: it, exact: !plainStrings(raw)}
	r.object("", func(key string) bool {
		switch key {
		case "metadata":
			r.object("metadata.", func(key string) bool {
				switch key {
				case "name":
					p.Name = r.string()
				case "generateName":
					p.GenerateName = r.string()
				case "namespace":
					p.Namespace = r.string()
				case "labels":
					p.Labels = r.stringMap()
				case "annotations":
					p.Annotations = r.stringMap()
				default:
					return false
				}
				return true
			})
		case "spec":
			r.object("spec.", func(key string) bool {
				switch key {
				case "hostNetwork":
					p.Spec.HostNetwork = r.bool()
				case "containers":
					p.Spec.Containers = r.containers("spec.containers[].")
				case "initContainers":
					p.Spec.InitContainers = r.initContainers()
				case "volumes":
					p.Spec.Volumes = r.volumes()
				default:
					return false
				}
				return true
			})
		default:
			return false
		}
		return true
	})
	if r.err == nil && it.Error != nil && !errors.Is(it.Error, io.EOF) {
		r.err = it.Error
	}
	if r.err == nil && it.WhatIsNext() != jsoniter.InvalidValue {
		r.err = errors.New("data after the pod")
	}
	return p, r.err
}

// podJSON matches keys case-sensitively, as the API server does.
var podJSON = jsoniter.Config{CaseSensitive: true}.Froze()

// plainStrings reports whether jsoniter reads every string of doc as
// encoding/json does: unless doc holds invalid UTF-8 (encoding/json
// replaces each invalid byte with U+FFFD, jsoniter keeps it) or an escaped
// UTF-16 surrogate, \uD800 to \uDFFF (the two pair an unpaired one with the
// next escape differently). The API server, which encodes reviews with
// encoding/json, sends neither.
func plainStrings(doc []byte) bool {
	if !utf8.Valid(doc) {
		return false
	}
	for i := 0; ; i += 2 {
		j := bytes.Index(doc[i:], []byte(`\u`))
		if j < 0 {
			return true
		}
		i += j
		if i+3 < len(doc) && doc[i+2]|0x20 == 'd' && bytes.IndexByte([]byte("89abAB"), doc[i+3]) >= 0 {
			return false
		}
	}
}

// podReader walks a pod's JSON; err is its first error.
type podReader struct {
	it  *jsoniter.Iterator
	err error
	// exact reads strings with encoding/json, for documents whose strings
	// jsoniter reads differently (see plainStrings).
	exact bool
	// buf holds the bytes of the value being read.
	buf []byte
}

// ok reports whether reading goes on.
func (r *podReader) ok() bool {
	return r.err == nil && r.it.Error == nil
}

// object reads an object (or null), calling read for each key: read reads
// the value of a key it knows and returns true, or returns false and the
// value is skipped. A known key may not repeat; path prefixes keys in errors.
// Keys are matched as jsoniter reads them: a key that reads differently
// with encoding/json holds invalid UTF-8 or a surrogate, and is no known
// key either way.
func (r *podReader) object(path string, read func(key string) bool) {
	var seen [5]string // the most keys a known object has
	n := 0
	r.it.ReadObjectCB(func(_ *jsoniter.Iterator, key string) bool {
		if slices.Contains(seen[:n], key) {
			r.err = fmt.Errorf("duplicate field %q", path+key)
			return false
		}
		if read(key) {
			seen[n] = key
			n++
		} else {
			r.it.Skip()
		}
		return r.ok()
	})
}

// string reads a string, or null ("").
func (r *podReader) string() string {
	if !r.exact {
		return r.it.ReadString()
	}
	var s string
	r.decode(&s)
	return s
}

// stringMap reads an object of strings, or null.
func (r *podReader) stringMap() map[string]string {
	if r.it.ReadNil() {
		return nil
	}
	m := map[string]string{}
	if r.exact {
		r.decode(&m)
		return m
	}
	r.it.ReadMapCB(func(it *jsoniter.Iterator, key string) bool {
		m[key] = it.ReadString()
		return it.Error == nil
	})
	return m
}

// decode reads the next value with encoding/json.
func (r *podReader) decode(v any) {
	r.buf = skip(r.it, r.buf)
	if r.it.Error == nil {
		r.err = json.Unmarshal(r.buf, v)
	}
}

// skip skips the next value and returns its bytes, reusing buf's array.
func skip(it *jsoniter.Iterator, buf []byte) []byte {
	if buf == nil {
		buf = []byte{} // jsoniter captures into a non-nil slice only
	}
	return it.SkipAndAppendBytes(buf[:0])
}

// bool reads true, false or null (false).
func (r *podReader) bool() bool {
	if r.it.ReadNil() {
		return false
	}
	return r.it.ReadBool()
}

// containers reads an array of containers (or null), keeping only their
// names; path prefixes keys in errors.
func (r *podReader) containers(path string) []corev1.Container {
	var cs []corev1.Container
	r.it.ReadArrayCB(func(*jsoniter.Iterator) bool {
		cs = append(cs, corev1.Container{Name: r.name(path)})
		return r.ok()
	})
	return cs
}

// name reads a container (or null), keeping only its name.
func (r *podReader) name(path string) string {
	var name string
	r.object(path, func(key string) bool {
		if key != "name" {
			return false
		}
		name = r.string()
		return true
	})
	return name
}

// initContainers reads an array of init containers (or null) like
// containers, except that the one named ContainerName is read whole: the
// webhook compares it with the container it injects.
func (r *podReader) initContainers() []corev1.Container {
	return readNamed(r, "spec.initContainers[].", ContainerName, "init container",
		func(name string) corev1.Container { return corev1.Container{Name: name} })
}

// volumes reads an array of volumes (or null), keeping only their names,
// except that the one named TokenBlockVolume is read whole: the webhook
// compares it with the volume it adds.
func (r *podReader) volumes() []corev1.Volume {
	return readNamed(r, "spec.volumes[].", TokenBlockVolume, "volume",
		func(name string) corev1.Volume { return corev1.Volume{Name: name} })
}

// readNamed reads an array (or null) of objects with a name at path, keeping
// of each only its name (named builds that), except the one named keep,
// which is decoded whole, as the API server decodes it (sigs.k8s.io/json:
// keys case-sensitive, the last of repeated keys wins). One with a field T
// does not know (from an API server newer than this webhook) or with a
// repeated key is kept as its name alone: its content cannot be shown to be
// what meshinit adds, so it is replaced. what names the kind in errors.
func readNamed[T any](r *podReader, path, keep, what string, named func(string) T) []T {
	var items []T
	var raw []byte
	r.it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
		raw = skip(it, raw)
		if it.Error != nil {
			return false
		}
		items = append(items, readOneNamed(r, raw, path, keep, what, named))
		return r.err == nil
	})
	return items
}

// readOneNamed reads the object whose JSON is raw, for readNamed.
func readOneNamed[T any](r *podReader, raw []byte, path, keep, what string, named func(string) T) T {
	it := podJSON.BorrowIterator(raw)
	defer podJSON.ReturnIterator(it)
	sub := podReader{it: it, exact: r.exact, buf: r.buf}
	name := sub.name(path)
	r.buf = sub.buf
	item := named(name)
	switch {
	case sub.err != nil:
		r.err = sub.err
	case it.Error != nil && !errors.Is(it.Error, io.EOF):
		r.err = it.Error
	case name == keep:
		var whole T
		strict, err := sigsjson.UnmarshalStrict(raw, &whole, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
		switch {
		case err != nil:
			r.err = fmt.Errorf("decoding %s %s: %w", what, keep, err)
		case len(strict) == 0:
			item = whole
		}
	}
	return item
}

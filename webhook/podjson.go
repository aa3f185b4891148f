package webhook

import (
	"errors"
	"fmt"
	"io"
	"slices"

	jsoniter "github.com/json-iterator/go"
	corev1 "k8s.io/api/core/v1"
)

// readPod reads the fields of a pod the webhook looks at (metadata name,
// generateName, namespace, labels, annotations; spec hostNetwork and the
// names of containers and init containers) from the pod's JSON in one pass
// that skips everything else, which keeps a review cheap: building a whole
// corev1.Pod costs several times more than the review's other work.
//
// The JSON has been checked already: admission.Webhook decodes the whole
// AdmissionReview before the handler runs. Like the API server, readPod
// matches keys case-sensitively and refuses a repeated key among those it
// reads, so the pod it returns is the document a patch applies to.
func readPod(raw []byte) (*corev1.Pod, error) {
	it := podJSON.BorrowIterator(raw)
	defer podJSON.ReturnIterator(it)
	p := &corev1.Pod{}
	r := podReader{it: it}
	r.object("", func(key string) bool {
		switch key {
		case "metadata":
			r.object("metadata.", func(key string) bool {
				switch key {
				case "name":
					p.Name = it.ReadString()
				case "generateName":
					p.GenerateName = it.ReadString()
				case "namespace":
					p.Namespace = it.ReadString()
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
					p.Spec.Containers = r.named()
				case "initContainers":
					p.Spec.InitContainers = r.named()
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

// podReader walks a pod's JSON; err is its first error.
type podReader struct {
	it  *jsoniter.Iterator
	err error
}

// object reads an object (or null), calling read for each key: read reads
// the value of a key it knows and returns true, or returns false and the
// value is skipped. A known key may not repeat; path prefixes keys in errors.
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
		return r.err == nil && r.it.Error == nil
	})
}

// stringMap reads an object of strings, or null.
func (r *podReader) stringMap() map[string]string {
	if r.it.ReadNil() {
		return nil
	}
	m := map[string]string{}
	r.it.ReadMapCB(func(it *jsoniter.Iterator, key string) bool {
		m[key] = it.ReadString()
		return it.Error == nil
	})
	return m
}

// bool reads true, false or null (false).
func (r *podReader) bool() bool {
	if r.it.ReadNil() {
		return false
	}
	return r.it.ReadBool()
}

// named reads an array of objects (or null), keeping only their names.
func (r *podReader) named() []corev1.Container {
	var items []struct {
		Name string `json:"name"`
	}
	r.it.ReadVal(&items)
	if items == nil {
		return nil
	}
	cs := make([]corev1.Container, len(items))
	for i, item := range items {
		cs[i].Name = item.Name
	}
	return cs
}

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

package charts

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// MustObjects renders the chart with opts as Objects does (its
// helm tests too when withTests), failing t on an error.
func MustObjects(t testing.TB, opts Options, withTests bool) []*unstructured.Unstructured {
	t.Helper()
	objs, err := Objects(opts, withTests)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// Find returns the objects of kind among objs, in order; only those named
// name unless name is "".
func Find(objs []*unstructured.Unstructured, kind, name string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind && (name == "" || o.GetName() == name) {
			out = append(out, o)
		}
	}
	return out
}

// DecodeOne decodes into out, a typed object such as *appsv1.Deployment,
// the one object of kind (named name, unless "") among objs. It fails t
// unless exactly one matches, and when the object has a field out's type
// does not know.
func DecodeOne(t testing.TB, objs []*unstructured.Unstructured, kind, name string, out any) {
	t.Helper()
	found := Find(objs, kind, name)
	if len(found) != 1 {
		what := kind
		if name != "" {
			what += " " + name
		}
		t.Fatalf("%d objects %s, want 1", len(found), what)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(found[0].Object, out, true); err != nil {
		t.Fatalf("decoding %s %s: %v", kind, found[0].GetName(), err)
	}
}

// MustObject decodes into out (as DecodeOne) the one object of kind, named
// name unless "", that the chart renders with opts, helm tests left out.
func MustObject(t testing.TB, opts Options, kind, name string, out any) {
	t.Helper()
	DecodeOne(t, MustObjects(t, opts, false), kind, name, out)
}

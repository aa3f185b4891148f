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
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"
)

func TestReadPod(t *testing.T) {
	for _, tc := range []struct {
		name, in, err string
		want          func(p *corev1.Pod) bool
	}{
		{name: "fields", in: `{"kind":"Pod","metadata":{"name":"a","generateName":"g-","namespace":"n","labels":{"x":"1"},"annotations":{"y":"2"},"uid":"u"},` +
			`"spec":{"hostNetwork":true,"containers":[{"name":"c","image":"i","ports":[{"containerPort":80}]}],"initContainers":[{"image":"j","name":"i1"},{"name":"i2"}]},"status":{}}`,
			want: func(p *corev1.Pod) bool {
				return p.Name == "a" && p.GenerateName == "g-" && p.Namespace == "n" && p.Labels["x"] == "1" && p.Annotations["y"] == "2" &&
					p.Spec.HostNetwork && len(p.Spec.Containers) == 1 && p.Spec.Containers[0].Name == "c" &&
					len(p.Spec.InitContainers) == 2 && p.Spec.InitContainers[1].Name == "i2"
			}},
		{name: "nulls", in: `{"metadata":{"name":null,"labels":null,"annotations":null},"spec":{"hostNetwork":null,"containers":null,"initContainers":null}}`,
			want: func(p *corev1.Pod) bool { return p.Name == "" && p.Labels == nil && p.Spec.InitContainers == nil }},
		{name: "null pod", in: `null`, want: func(p *corev1.Pod) bool { return p.Name == "" }},
		{name: "escaped key", in: `{"meta\u0064ata":{"name":"a"}}`, want: func(p *corev1.Pod) bool { return p.Name == "a" }},
		{name: "other case", in: `{"Metadata":{"name":"a"},"spec":{"Containers":[{}]}}`, want: func(p *corev1.Pod) bool { return p.Name == "" && p.Spec.Containers == nil }},
		{name: "invalid UTF-8 as encoding/json reads it", in: "{\"metadata\":{\"name\":\"a\xffb\",\"annotations\":{\"\x84\":\"\xe2\x82\"}},\"spec\":{\"containers\":[{\"name\":\"\xc0\"}]}}",
			want: func(p *corev1.Pod) bool {
				return p.Name == "a\uFFFDb" && p.Annotations["\uFFFD"] == "\uFFFD\uFFFD" && p.Spec.Containers[0].Name == "\uFFFD"
			}},
		{name: "surrogate escapes as encoding/json reads them", in: `{"metadata":{"name":"\ud800\ud800\udc00","labels":{"\udc00":"\ud83d\ude00"}}}`,
			want: func(p *corev1.Pod) bool { return p.Name == "\uFFFD\U00010000" && p.Labels["\uFFFD"] == "\U0001F600" }},
		{name: "meshinit's init container whole, others by name", in: `{"spec":{"initContainers":[{"name":"a","image":"x"},{"image":"i","args":["apply"],"env":[{"name":"E","value":"v"}],"name":"meshinit-redirect"},null]}}`,
			want: func(p *corev1.Pod) bool {
				ic := p.Spec.InitContainers
				return len(ic) == 3 && ic[0].Image == "" && ic[1].Image == "i" && ic[1].Args[0] == "apply" && ic[1].Env[0].Value == "v" && ic[2].Name == ""
			}},
		{name: "meshinit's init container with an unknown field", in: `{"spec":{"initContainers":[{"name":"meshinit-redirect","image":"i","futureField":1}]}}`,
			want: func(p *corev1.Pod) bool {
				return reflect.DeepEqual(p.Spec.InitContainers, []corev1.Container{{Name: ContainerName}})
			}},
		{name: "meshinit's init container with a repeated key", in: `{"spec":{"initContainers":[{"name":"meshinit-redirect","image":"i","image":"j"}]}}`,
			want: func(p *corev1.Pod) bool {
				return reflect.DeepEqual(p.Spec.InitContainers, []corev1.Container{{Name: ContainerName}})
			}},
		{name: "meshinit's init container keys case-sensitive", in: `{"spec":{"initContainers":[{"name":"meshinit-redirect","Image":"i"}]}}`,
			want: func(p *corev1.Pod) bool {
				return reflect.DeepEqual(p.Spec.InitContainers, []corev1.Container{{Name: ContainerName}})
			}},
		{name: "meshinit's init container malformed", in: `{"spec":{"initContainers":[{"name":"meshinit-redirect","args":"apply"}]}}`,
			err: "decoding init container meshinit-redirect: json: cannot unmarshal string"},
		{name: "init container not an object", in: `{"spec":{"initContainers":[1]}}`, err: "ReadObjectCB"},
		{name: "init container name repeated", in: `{"spec":{"initContainers":[{"name":"a","name":"meshinit-redirect"}]}}`, err: `duplicate field "spec.initContainers[].name"`},
		{name: "duplicate spec", in: `{"spec":{"containers":[{}]},"spec":null}`, err: `duplicate field "spec"`},
		{name: "duplicate name", in: `{"metadata":{"name":"a","name":"b"}}`, err: `duplicate field "metadata.name"`},
		{name: "label not a string", in: `{"metadata":{"labels":{"a":1}}}`, err: "ReadString"},
		{name: "containers not a list", in: `{"spec":{"containers":"no"}}`, err: "ReadArrayCB"},
		{name: "container name not a string", in: `{"spec":{"containers":[{"name":1}]}}`, err: "ReadString"},
		{name: "hostNetwork not a bool", in: `{"spec":{"hostNetwork":"yes"}}`, err: "ReadBool"},
		{name: "not an object", in: `[]`, err: "ReadObjectCB"},
		{name: "data after", in: `{} {}`, err: "data after the pod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := readPod([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !tc.want(p) {
				t.Errorf("readPod = %+v, %v", p, err)
			}
		})
	}
}

// FuzzReadPod checks readPod against decoding the whole pod the way the
// API server does: when both accept a document, they read the same fields.
func FuzzReadPod(f *testing.F) {
	f.Add([]byte(plainPod))
	f.Add([]byte(`{"metadata":{"name":"a","labels":{"x":"y"},"annotations":{"z":""}},"spec":{"hostNetwork":false,"containers":[{"name":"c"}],"initContainers":[{"name":"i"}]}}`))
	f.Add([]byte(`{"spec":{"initContainers":[{"name":"i"},{"name":"meshinit-redirect","image":"r","args":["apply","--proxy-uid=1337"],"resources":{"limits":{"memory":"64Mi"}},"securityContext":{"runAsUser":0}}]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // admission.Webhook refuses invalid JSON before the handler
		}
		got, err := readPod(raw)
		var want corev1.Pod
		strict, wantErr := sigsjson.UnmarshalStrict(raw, &want, sigsjson.DisallowDuplicateFields)
		if err != nil || wantErr != nil || len(strict) > 0 {
			return
		}
		g, w := viewOf(got), viewOf(&want)
		if unknown, _ := sigsjson.UnmarshalStrict(raw, &corev1.Pod{}, sigsjson.DisallowUnknownFields); len(unknown) > 0 {
			// readPod reads meshinit's init container as its name alone
			// when it has fields corev1.Container lacks.
			g.Own, w.Own = nil, nil
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("readPod %+v\nwant    %+v", g, w)
		}
	})
}

// podView is what readPod reads of a pod.
type podView struct {
	Name, GenerateName, Namespace string
	Labels, Annotations           map[string]string
	HostNetwork                   bool
	Containers, InitContainers    []string
	// Own is the init container named ContainerName, read whole.
	Own *corev1.Container
}

func viewOf(p *corev1.Pod) podView {
	names := func(cs []corev1.Container) []string {
		var n []string
		for _, c := range cs {
			n = append(n, c.Name)
		}
		return n
	}
	v := podView{Name: p.Name, GenerateName: p.GenerateName, Namespace: p.Namespace,
		Labels: p.Labels, Annotations: p.Annotations, HostNetwork: p.Spec.HostNetwork,
		Containers: names(p.Spec.Containers), InitContainers: names(p.Spec.InitContainers)}
	if i := containerIndex(p.Spec.InitContainers, ContainerName); i >= 0 {
		v.Own = &p.Spec.InitContainers[i]
	}
	return v
}

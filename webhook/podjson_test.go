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
		{name: "duplicate spec", in: `{"spec":{"containers":[{}]},"spec":null}`, err: `duplicate field "spec"`},
		{name: "duplicate name", in: `{"metadata":{"name":"a","name":"b"}}`, err: `duplicate field "metadata.name"`},
		{name: "label not a string", in: `{"metadata":{"labels":{"a":1}}}`, err: "ReadString"},
		{name: "containers not a list", in: `{"spec":{"containers":"no"}}`, err: "decode slice"},
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
		names := func(cs []corev1.Container) []string {
			var n []string
			for _, c := range cs {
				n = append(n, c.Name)
			}
			return n
		}
		if got.Name != want.Name || got.GenerateName != want.GenerateName || got.Namespace != want.Namespace ||
			!reflect.DeepEqual(got.Labels, want.Labels) || !reflect.DeepEqual(got.Annotations, want.Annotations) ||
			got.Spec.HostNetwork != want.Spec.HostNetwork ||
			!reflect.DeepEqual(names(got.Spec.Containers), names(want.Spec.Containers)) ||
			!reflect.DeepEqual(names(got.Spec.InitContainers), names(want.Spec.InitContainers)) {
			t.Errorf("readPod %+v\nwant    %+v", got, want)
		}
	})
}

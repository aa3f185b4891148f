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
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/meshinit/meshinit/charts"
)

func TestFindAndDecodeOne(t *testing.T) {
	objs := charts.MustObjects(t, charts.Options{Namespace: "ns"}, true)
	if n := len(charts.Find(objs, "Pod", "")); n != 1 {
		t.Errorf("%d Pods with the chart's helm test, want 1", n)
	}
	if n := len(charts.Find(objs, "ServiceAccount", "meshinit-webhook")); n != 1 {
		t.Errorf("%d ServiceAccounts meshinit-webhook, want 1", n)
	}
	var d appsv1.Deployment
	charts.MustObject(t, charts.Options{Namespace: "ns"}, "Deployment", "meshinit-webhook", &d)
	if d.Namespace != "ns" || len(d.Spec.Template.Spec.Containers) == 0 {
		t.Errorf("decoded Deployment %s/%s with %d containers", d.Namespace, d.Name, len(d.Spec.Template.Spec.Containers))
	}
}

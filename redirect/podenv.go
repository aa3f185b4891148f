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

package redirect

// PodEnvVar is an environment variable of meshinit's init container: the
// downward API's FieldPath of the pod, under Name, and the attribute Attr
// under which the redirector logs it.
type PodEnvVar struct {
	Name, FieldPath, Attr string
}

// PodEnv are the environment variables both injectors give meshinit's init
// container, in this order: the pod's namespace, name and UID from the
// downward API (issue 26). The redirector adds each that is set to every
// line it logs, so a log pipeline can tell whose redirect a line is about.
// They only label logs: nothing the redirector programs reads them, and
// the RedirectPolicy's policy and both injectors refuse a meshinit-redirect
// with any other env (the chart's meshinit.inject.env mirrors this list).
var PodEnv = []PodEnvVar{
	{Name: "MESHINIT_POD_NAMESPACE", FieldPath: "metadata.namespace", Attr: "namespace"},
	{Name: "MESHINIT_POD_NAME", FieldPath: "metadata.name", Attr: "pod"},
	{Name: "MESHINIT_POD_UID", FieldPath: "metadata.uid", Attr: "podUID"},
}

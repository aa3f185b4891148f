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

package kubectlplugin

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// readError says which read of the API failed, naming the verb and the
// resource as RBAC does, so a refused read tells the reader what to ask
// for; resource is its plural with its group ("pods",
// "deployments.apps").
func readError(verb, resource, namespace string, err error) error {
	where := ""
	if namespace != "" {
		where = " in namespace " + namespace
	}
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("RBAC does not allow you to %s %s%s (needs verb %q on %q): %w", verb, resource, where, verb, resource, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server did not accept your credentials to %s %s%s (check your kubeconfig's user): %w", verb, resource, where, err)
	}
	return fmt.Errorf("%s %s%s: %w", verb, resource, where, err)
}

// errNotInstalled is why a command cannot look at meshinit.
var errNotInstalled = errors.New("meshinit is not installed in this cluster: no MutatingWebhookConfiguration, MutatingAdmissionPolicy " +
	"or ValidatingAdmissionPolicyBinding is labelled " + labelName + "=" + chartName +
	"; install it: helm install meshinit charts/meshinit -n meshinit-system --create-namespace")

// notServed reports whether err says the API server does not serve the
// resource at all (an API that is not there yet, such as
// MutatingAdmissionPolicy on older servers).
func notServed(err error) bool {
	return apierrors.IsNotFound(err)
}

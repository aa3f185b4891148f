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

// Package poll waits for a condition with
// k8s.io/apimachinery/pkg/util/wait, keeping the reason the condition last
// gave for not holding, so that whoever gives up can say why.
package poll

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Until calls cond at once and then every interval until it returns nil,
// timeout passes or ctx ends (wait.PollUntilContextTimeout). It returns nil
// once cond has returned nil; otherwise the last error cond returned. cond
// gets a context that ends with the timeout.
func Until(ctx context.Context, interval, timeout time.Duration, cond func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		last = cond(ctx)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

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

// Package initimage is meshinit's init container program, the redirector:
// Main turns its command line into a redirect.Config and calls package
// redirect, which holds the redirect logic (shared with the webhook);
// cmd/redirector is the thin main over Main. Start with Main (command.go);
// caps_linux.go hands the redirector's capabilities on to iptables. The
// image's recipe is in internal/images.
package initimage

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

// Package docs keeps README.md and docs/ true. It reads the project's
// Markdown as the tests that check it need it: fenced blocks, console
// transcripts and their expected output (markdown.go), links and the
// anchors they point at (links.go).
//
// Its tests:
//
//   - TestREADMECommands: every command README.md gives is checked. `make`
//     commands by a dry run of the Makefile; `helm` commands by rendering
//     the chart with their values, the released chart's version against
//     Chart.yaml; the test command against .ci/run. Console transcripts
//     (```console blocks: `$ kubectl ...` lines and their output) are
//     executed on a real cluster by the e2e package's TestDemo, right after
//     the demo, and their output compared (e2e/readme_test.go).
//   - TestREADMEIsShort: README.md stays under 150 lines.
//   - TestLinks: every relative link in README.md and docs/*.md points at a
//     file that exists and, with a #fragment, at a heading in it.
//   - TestRedirectPolicyExamples: every RedirectPolicy example in the docs
//     fits the CRD's schema, and every chart values example ("# values.yaml")
//     the chart's.
//   - TestGeneratedFilesAreCurrent: the references written from their
//     sources of truth: docs/configuration.md's chart values table (from
//     charts/meshinit/values.yaml and values.schema.json) and
//     docs/redirectpolicy-reference.md (from the CRD in
//     charts/meshinit/crds/). The redirect settings' tables in
//     docs/configuration.md are redirect's (its generate_test.go). `make
//     generate` runs both with -update.
package docs

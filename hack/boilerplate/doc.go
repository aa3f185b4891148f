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

// Command boilerplate checks, and with -fix adds, the licence header every
// Go file, shell script and Makefile of the repository starts with, as the
// Kubernetes projects do (their hack/boilerplate): the Apache-2.0 notice of
// boilerplate.go.txt, "Copyright The meshinit Authors." without a year,
// after a shell script's "#!" line and before everything else in a Go
// file except its build constraints, which must stay first to count.
// controller-gen writes the same header into the code it generates
// (hack/controller-gen/generate.sh passes it boilerplate.go.txt).
//
//	go run ./hack/boilerplate        # lists the files without it; exit 1 if any
//	go run ./hack/boilerplate -fix   # adds it to them
//
// TestRepositoryHeaders runs the check in `go test ./...`. The files are
// the ones git tracks, less testdata/ (inputs kept byte for byte) and
// .ci/ (CI's entry point, kept to what CI runs).
package main

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

package oci_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"log"

	"github.com/meshinit/meshinit/internal/images/oci"
)

// Build a one-file image and write it as an OCI archive that
// `ctr -n k8s.io images import` names docker.io/example/hello:v1.
func Example() {
	p, err := oci.LookupPlatform("amd64")
	if err != nil {
		log.Fatal(err)
	}
	layer, err := oci.NewLayer([]oci.File{
		oci.RegularFile("/hello.txt", 0o644, []byte("hello\n")),
		oci.Dir("/tmp", fs.ModeSticky|0o777),
	}, oci.LayerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	img, err := oci.NewImage(oci.Config{
		Platform:   p,
		Entrypoint: []string{"/hello"},
		Labels:     map[string]string{oci.LabelVersion: "v1"},
	}, layer)
	if err != nil {
		log.Fatal(err)
	}
	var archive bytes.Buffer // usually an *os.File named <name>.oci.tar
	if err := oci.WriteArchive(&archive, "example/hello:v1", img); err != nil {
		log.Fatal(err)
	}
	name, _ := oci.NormalizeRef("example/hello:v1")
	fmt.Println(name)
	// Output: docker.io/example/hello:v1
}

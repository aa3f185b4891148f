package ociimage_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"log"

	"github.com/meshinit/meshinit/internal/ociimage"
)

// Build a one-file image and write it as an OCI archive that
// `ctr -n k8s.io images import` names docker.io/example/hello:v1.
func Example() {
	p, err := ociimage.LookupPlatform("amd64")
	if err != nil {
		log.Fatal(err)
	}
	layer, err := ociimage.NewLayer([]ociimage.File{
		ociimage.RegularFile("/hello.txt", 0o644, []byte("hello\n")),
		ociimage.Dir("/tmp", fs.ModeSticky|0o777),
	}, ociimage.LayerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	img, err := ociimage.NewImage(ociimage.Config{
		Platform:   p,
		Entrypoint: []string{"/hello"},
		Labels:     map[string]string{ociimage.LabelVersion: "v1"},
	}, layer)
	if err != nil {
		log.Fatal(err)
	}
	var archive bytes.Buffer // usually an *os.File named <name>.oci.tar
	if err := ociimage.WriteArchive(&archive, "example/hello:v1", img); err != nil {
		log.Fatal(err)
	}
	name, _ := ociimage.NormalizeRef("example/hello:v1")
	fmt.Println(name)
	// Output: docker.io/example/hello:v1
}

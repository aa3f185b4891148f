package images

import (
	"context"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// push uploads idx with every image and blob it references to ref
// ("registry/repository:tag") and writes "pushed\t<ref>@<digest>" to log.
// Credentials come from the Docker config (authn.DefaultKeychain); loopback
// and private-network registries are spoken to over plain HTTP, as
// go-containerregistry does.
func push(ctx context.Context, ref string, idx v1.ImageIndex, log io.Writer) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("push: reference %q: %w", ref, err)
	}
	if err := remote.WriteIndex(tag, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "pushed\t%s@%s\n", tag, d)
	return nil
}

// Package initimage holds meshinit's init container: the redirector command
// (cmd/redirector, a thin main over package command). The redirect logic
// itself lives in package redirect, shared with the webhook; the image's
// recipe is in internal/images.
package initimage

// Package initimage holds meshinit's init container: the redirector command
// (cmd/redirector, a thin main over package command) and how its image is
// built. The redirect logic itself lives in package redirect, shared with the
// webhook.
package initimage

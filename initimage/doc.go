// Package initimage is meshinit's init container program, the redirector:
// Main turns its command line into a redirect.Config and calls package
// redirect, which holds the redirect logic (shared with the webhook);
// cmd/redirector is the thin main over Main. Start with Main (command.go);
// caps_linux.go hands the redirector's capabilities on to iptables. The
// image's recipe is in internal/images.
package initimage

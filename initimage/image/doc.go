// Package image is the recipe of the redirector's container image, the init
// container meshinit injects: what goes in, not how images are made (that is
// internal/images/oci).
//
// The image holds the static redirector at /usr/local/bin/redirector (the
// entrypoint) and Debian's iptables: xtables-nft-multi and
// xtables-legacy-multi with every iptables-*/ip6tables-* link the package
// ships (the redirector runs them by those names, never through the
// "iptables" alternatives link), the extension modules in
// /usr/lib/<triplet>/xtables/, and the shared libraries and loader they
// need. Which libraries is read from the programs (DT_NEEDED), within the
// packages apt resolves from iptables' dependencies, so the list cannot
// silently rot: a library that goes missing fails the build.
//
// It runs as a non-root user, User (65532:0), with a read-only root file
// system and no_new_privs, as the webhook's init container does: the
// redirector carries the file capabilities RedirectorCapabilities
// (security.capability, a PAX record in its layer) and passes them to
// iptables; the legacy backend's lock file, XtablesLock, is in the image.
//
// Start with Build; hack/images is the command that runs it.
package image

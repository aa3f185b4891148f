package webhook

// ApplyPatch is applyPatch, for the tests of package webhook_test.
var ApplyPatch = applyPatch

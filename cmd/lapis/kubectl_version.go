package main

import (
	_ "unsafe" // for go:linkname

	"k8s.io/component-base/version"
)

// The bundled kubectl reports the version of the k8s.io/kubectl module it is built from. Release
// builds of kubectl set these with -ldflags; `go run` cannot, so they are set here, before
// kubectl reads them (kubectl fails `kubectl version` on the unset placeholder).

//go:linkname kubectlGitVersion k8s.io/component-base/version.gitVersion
var kubectlGitVersion string

//go:linkname kubectlGitMajor k8s.io/component-base/version.gitMajor
var kubectlGitMajor string

//go:linkname kubectlGitMinor k8s.io/component-base/version.gitMinor
var kubectlGitMinor string

//go:linkname kubectlGitTreeState k8s.io/component-base/version.gitTreeState
var kubectlGitTreeState string

func init() {
	kubectlGitVersion, kubectlGitMajor, kubectlGitMinor, kubectlGitTreeState = "v1.37.2", "1", "37", "clean"
	// The package captured the placeholder in its own init; hand it the real version too.
	_ = version.SetDynamicVersion(kubectlGitVersion)
}

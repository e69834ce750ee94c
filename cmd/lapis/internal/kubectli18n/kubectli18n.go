package kubectli18n

import (
	"os"
	"path/filepath"

	"k8s.io/kubectl/pkg/util/i18n"
)

func init() {
	if runsKubectl(os.Args) {
		return // kubectl's own loader, as kubectl
	}
	// Untranslated texts are the English ones kubectl's default catalogue holds; this process
	// never shows them.
	_ = i18n.SetLoadTranslationsFunc(func() error { return nil })
}

// runsKubectl reports whether the process started with args is the bundled kubectl: lapis
// started as kubectl, or `lapis kubectl ...` (cmd/lapis's dispatch).
func runsKubectl(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch filepath.Base(args[0]) {
	case "kubectl":
		return true
	case "kube-apiserver", "etcd": // those programs, whatever their arguments
		return false
	}
	return len(args) > 1 && args[1] == "kubectl"
}

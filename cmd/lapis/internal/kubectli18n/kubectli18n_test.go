package kubectli18n

import (
	"testing"

	"k8s.io/kubectl/pkg/util/i18n"
)

func TestRunsKubectl(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"lapis"}, false},
		{[]string{"lapis", "serve", "--data-dir", "kubectl"}, false},
		{[]string{"/usr/bin/lapis", "kubectl", "get", "ns"}, true},
		{[]string{"/tmp/assets/kubectl", "apply", "-f", "x.yaml"}, true},
		{[]string{"kubectl"}, true},
		{[]string{"/tmp/assets/kube-apiserver", "--secure-port", "6443"}, false},
		{[]string{"/tmp/assets/etcd", "kubectl"}, false},
	} {
		if got := runsKubectl(tc.args); got != tc.want {
			t.Errorf("runsKubectl(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// The test binary is not kubectl: translation answers the English text without a catalogue.
func TestNoCatalogueOutsideKubectl(t *testing.T) {
	const text = "Print the list of flags inherited by all commands"
	if got := i18n.T(text); got != text {
		t.Errorf("T(%q) = %q", text, got)
	}
}

package acceptance

import (
	"fmt"
	"strings"
	"testing"
)

// TestKubeAPIServerServeFlags: kube-apiserver's names on lapis serve — --secure-port and
// --bind-address replace --listen's parts; --allow-privileged lets privileged containers in,
// as kube's.
func TestKubeAPIServerServeFlags(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	l := startLapis(t, "--secure-port", fmt.Sprint(port), "--bind-address", "127.0.0.1", "--allow-privileged")
	wantEqual(t, "server", l.server, fmt.Sprintf("https://127.0.0.1:%d", port))
	privileged := "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec: {containers: [{name: c, image: x, securityContext: {privileged: true}}]}\n"
	wantEqual(t, "privileged pod with --allow-privileged", l.mustIn(t, privileged, "create", "-f", "-"), "pod/p created")

	plain := startLapis(t)
	if !strings.HasPrefix(plain.server, "https://127.0.0.1:") {
		t.Errorf("server %s", plain.server)
	}
	wantEqual(t, "privileged pod without it", plain.fails(t, privileged, "create", "-f", "-"),
		`The Pod "p" is invalid: spec.containers[0].securityContext.privileged: Forbidden: disallowed by cluster policy`)
}

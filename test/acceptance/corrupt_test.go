package acceptance

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// metaStatus decodes a Status answer.
func metaStatus(t *testing.T, body string) metav1.Status {
	t.Helper()
	var s metav1.Status
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("not a Status: %s", body)
	}
	return s
}

// TestCorruptObjects: a value in etcd lapis cannot read is answered as kube-apiserver 1.37
// answers it — its GET a 500 naming the key, a list that includes it a StorageReadError naming
// it — while everything else is served, lapis restarts with it in place, and an admin removes it
// with ignoreStoreReadErrorWithClusterBreakingPotential (kube's answers recorded from 1.37.2).
func TestCorruptObjects(t *testing.T) {
	t.Parallel()
	endpoint := fmt.Sprintf("https://127.0.0.1:%d", freePort(t))
	l := startLapis(t, "--embedded-etcd-listen", endpoint)
	l.must(t, "create", "ns", "rot")
	l.must(t, "create", "ns", "sound")
	l.must(t, "create", "configmap", "good", "-n", "rot", "--from-literal=a=b")
	l.must(t, "create", "configmap", "fine", "-n", "sound", "--from-literal=a=b")
	c := l.etcdClient(t, endpoint)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "/registry/configmaps/rot/broken", "garbage!"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the watch cache takes it in

	const get = "/api/v1/namespaces/rot/configmaps/broken"
	checkCorrupt := func(t *testing.T) {
		code, body := l.do(t, "GET", get, "", "", true)
		s := metaStatus(t, body)
		wantCode(t, "GET code", code, 500)
		wantEqual(t, "GET reason", string(s.Reason), "InternalError")
		wantContains(t, "GET message", s.Message, "Internal error occurred: StorageError: corrupt object, Code: 7, Key: /configmaps/rot/broken, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=")
		for _, list := range []string{"/api/v1/namespaces/rot/configmaps", "/api/v1/namespaces/rot/configmaps?resourceVersion=0", "/api/v1/namespaces/rot/configmaps?limit=1", "/api/v1/configmaps"} {
			code, body = l.do(t, "GET", list, "", "", true)
			s = metaStatus(t, body)
			wantCode(t, list+" code", code, 500)
			wantEqual(t, list+" reason", string(s.Reason), "StorageReadError")
			wantContains(t, list+" message", s.Message, "failed to read one or more configmaps from the storage: StorageError: corrupt object, Code: 7, Key: /registry/configmaps/rot/broken")
			if s.Details == nil || len(s.Details.Causes) != 1 || s.Details.Causes[0].Field != "/registry/configmaps/rot/broken" || s.Details.Name != "list" || s.Details.Kind != "configmaps" {
				t.Errorf("%s details: %+v", list, s.Details)
			}
		}
		// Everything else is served.
		wantEqual(t, "other namespace", l.must(t, "get", "configmap", "-n", "sound", "-o", "name"), "configmap/fine\nconfigmap/kube-root-ca.crt")
		wantEqual(t, "readyz", l.must(t, "get", "--raw", "/readyz"), "ok")
	}
	checkCorrupt(t)
	wantContains(t, "log", l.log.String(), "/registry/configmaps/rot/broken")

	// lapis starts on an etcd holding it.
	c.Close()
	l.Restart(t)
	checkCorrupt(t)

	unsafe := `{"ignoreStoreReadErrorWithClusterBreakingPotential":true}`
	code, body := l.do(t, "DELETE", "/api/v1/namespaces/rot/configmaps/good", "application/json", unsafe, true)
	wantCode(t, "unsafe delete of a readable object", code, 409)
	wantContains(t, "its message", metaStatus(t, body).Message, "unsafe deletion is not allowed because the object is decodable from storage")
	code, _ = l.do(t, "DELETE", get, "", "", true)
	wantCode(t, "plain delete of a corrupt object", code, 500)
	code, _ = l.do(t, "DELETE", get, "application/json", `{"ignoreStoreReadErrorWithClusterBreakingPotential":true,"dryRun":["All"]}`, true)
	wantCode(t, "dry-run unsafe delete", code, 200)
	checkCorrupt(t)
	code, _ = l.do(t, "DELETE", "/api/v1/namespaces/rot/configmaps", "application/json", unsafe, true)
	wantCode(t, "unsafe deletecollection", code, 422)
	code, body = l.do(t, "DELETE", get, "application/json", unsafe, true)
	wantCode(t, "unsafe delete", code, 200)
	if s := metaStatus(t, body); s.Details == nil || s.Details.Name != "broken" || s.Details.Kind != "ConfigMap" || s.Status != "Success" {
		t.Errorf("unsafe delete answered %s", body)
	}
	code, _ = l.do(t, "GET", get, "", "", true)
	wantCode(t, "GET after the unsafe delete", code, 404)
	wantEqual(t, "list after", l.must(t, "get", "configmap", "-n", "rot", "-o", "name"), "configmap/good\nconfigmap/kube-root-ca.crt")
}

func wantCode(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s: code %d, want %d", what, got, want)
	}
}

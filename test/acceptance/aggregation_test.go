package acceptance

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
)

// upgradeServer is a stand-in extension API server of wardle.example.com/v1alpha1 whose
// things/NAME/exec upgrades the connection and echoes what it reads, telling who asked.
func upgradeServer(t *testing.T) (*httptest.Server, <-chan string) {
	users := make(chan string, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/apis/wardle.example.com/v1alpha1":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"wardle.example.com/v1alpha1",`+
				`"resources":[{"name":"things","singularName":"thing","namespaced":true,"kind":"Thing","verbs":["get"]},`+
				`{"name":"things/exec","singularName":"","namespaced":true,"kind":"Thing","verbs":["create"]}]}`)
		case strings.HasSuffix(r.URL.Path, "/exec") && r.Header.Get("Upgrade") == "lapis-test-stream":
			users <- r.Header.Get("X-Remote-User")
			conn, rw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			fmt.Fprint(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: lapis-test-stream\r\n\r\n")
			_ = rw.Flush()
			_, _ = io.Copy(conn, rw) // echo until the client hangs up
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, users
}

// TestAggregatedUpgrade: an upgraded stream (an exec) of an extension server's group version
// goes through lapis's whole request path to it, with the user in X-Remote-User, and back.
func TestAggregatedUpgrade(t *testing.T) {
	l := startLapis(t)
	backend, users := upgradeServer(t)
	host, port, _ := net.SplitHostPort(backend.Listener.Addr().String())
	l.mustIn(t, fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: wardle}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: wardle}
spec: {type: ExternalName, externalName: "%s"}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.wardle.example.com}
spec:
  group: wardle.example.com
  version: v1alpha1
  groupPriorityMinimum: 2000
  versionPriority: 200
  insecureSkipTLSVerify: true
  service: {namespace: wardle, name: api, port: %s}
`, host, port), "apply", "-f", "-")
	// Not kubectl wait: kubectl 1.32's fails at once on an object without conditions yet.
	poll.Eventually(t, 60*time.Second, "APIService Available", func() (bool, string) {
		out, _, _ := l.kubectl("get", "apiservice", "v1alpha1.wardle.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Available")]}`)
		return strings.Contains(out, `"status":"True"`), out
	})

	conn := upgradeRequest(t, l, "/apis/wardle.example.com/v1alpha1/namespaces/wardle/things/t/exec")
	defer conn.Close()
	if who := <-users; who != "admin" {
		t.Errorf("the extension server was asked by %q, want admin", who)
	}
	if _, err := fmt.Fprint(conn, "ping\n"); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := bufio.NewReader(conn).ReadString('\n'); err != nil || line != "ping\n" {
		t.Errorf("echo through the upgraded stream: %q %v", line, err)
	}
}

// upgradeRequest opens an HTTP/1.1 connection to lapis as admin, asks to upgrade path and
// returns the connection once lapis answered 101.
func upgradeRequest(t *testing.T, l *lapisProc, path string) net.Conn {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(l.caData)
	addr := strings.TrimPrefix(l.server, "https://")
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, NextProtos: []string{"http/1.1"}, ServerName: strings.Split(addr, ":")[0]})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: lapis-test-stream\r\nContent-Length: 0\r\n\r\n", path, addr, l.token)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("upgrade through lapis: %s %s", resp.Status, body)
	}
	_ = conn.SetReadDeadline(time.Time{})
	return conn
}

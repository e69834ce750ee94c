package acceptance

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
	"golang.org/x/sys/unix"
)

// rawResult is one HTTP answer, or the error that stood for it, and how long it took.
type rawResult struct {
	code int
	body string
	err  error
	took time.Duration
}

func (r rawResult) String() string {
	if r.err != nil {
		return fmt.Sprintf("error %v after %v", r.err, r.took.Round(time.Millisecond))
	}
	return fmt.Sprintf("%d %q after %v", r.code, r.body, r.took.Round(time.Millisecond))
}

// faultRequest sends one HTTPS request with the admin token, giving up after timeout; unlike do it
// reports a request that gets no answer instead of failing the test.
func (l *lapisProc) faultRequest(method, path, contentType, body string, timeout time.Duration) rawResult {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(l.caData)
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true}}
	req, err := http.NewRequest(method, l.server+path, strings.NewReader(body))
	if err != nil {
		return rawResult{err: err}
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+l.token)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return rawResult{err: err, took: time.Since(start)}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResult{code: resp.StatusCode, body: string(b), took: time.Since(start)}
}

// writeRequest is one write through the API, of every kind lapis serves.
type writeRequest struct {
	name, method, path, contentType, body string
}

func writesTo(ns, existing string) []writeRequest {
	cm := "/api/v1/namespaces/" + ns + "/configmaps"
	return []writeRequest{
		{"create", "POST", cm, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"refused"}}`},
		{"create namespace", "POST", "/api/v1/namespaces", "application/json", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"refused"}}`},
		{"update", "PUT", cm + "/" + existing, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + existing + `"},"data":{"k":"updated"}}`},
		{"merge patch", "PATCH", cm + "/" + existing, "application/merge-patch+json", `{"data":{"k":"patched"}}`},
		{"json patch", "PATCH", cm + "/" + existing, "application/json-patch+json", `[{"op":"add","path":"/data/j","value":"x"}]`},
		{"apply", "PATCH", cm + "/applied?fieldManager=faults", "application/apply-patch+yaml", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied"},"data":{"a":"b"}}`},
		{"delete", "DELETE", cm + "/" + existing, "", ""},
		{"deletecollection", "DELETE", cm, "", ""},
	}
}

// mountTmpfs mounts a tmpfs of size at a fresh directory, unmounted when the test ends, or
// skips the test when this process may not mount one.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs for a full-disk test (needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// freeBytes is the space left on dir's filesystem.
func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// fill takes space on dir's filesystem in a new file, leaving about leave bytes free (0: none).
func fill(t *testing.T, dir string, leave int64) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "fill-")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n := freeBytes(t, dir) - leave; n > 0 {
		if err := unix.Fallocate(int(f.Fd()), 0, 0, n); err != nil {
			t.Fatalf("filling %s: %v", dir, err)
		}
	}
	if leave == 0 {
		// Whatever fallocate left (partial blocks), written until the disk refuses.
		buf := make([]byte, 64<<10)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling %s: %v", dir, err)
				}
				break
			}
		}
	}
	return f.Name()
}

// TestDiskFull: with its data on a full disk lapis stays up, refuses every kind of write with
// 507 and says why (in the answer and in its log), serves reads and health, and writes again
// once space is back; it never loses an acknowledged object. Restarted on a full disk, it
// exits saying the disk is full; restarted with a little room, it serves reads and refuses
// writes, until space is back or, when etcd had no room for its next WAL segment, until a
// restart with space back.
func TestDiskFull(t *testing.T) {
	start := time.Now()
	d := startOnSmallDisk(t)
	nearly := d.nearlyFullRefusesWrites(t)
	full := d.fullDiskRefusesWritesAndServesReads(t)
	d.writesResumeWhenSpaceIsBack(t, nearly, full)
	d.cannotStartOnFullDisk(t)
	d.restartWithLittleRoomWaitsForSpace(t)
	d.secondRestartWithLittleRoomWaitsForRestart(t)
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}

// smallDisk is TestDiskFull's lapis on a 300 MiB tmpfs and the ConfigMaps whose creation it
// acknowledged, which every restart must still serve. The steps run in order.
type smallDisk struct {
	l            *lapisProc
	mnt          string
	acknowledged []string
}

func startOnSmallDisk(t *testing.T) *smallDisk {
	mnt := mountTmpfs(t, "300m")
	d := &smallDisk{l: startLapisIn(t, filepath.Join(mnt, "data")), mnt: mnt, acknowledged: []string{}}
	if free := freeBytes(t, mnt); free < 120<<20 {
		t.Fatalf("only %d MiB free after lapis started on a 300 MiB tmpfs", free>>20)
	}
	d.l.must(t, "create", "namespace", "faults")
	for i := range 5 {
		name := fmt.Sprintf("before-%d", i)
		d.l.must(t, "-n", "faults", "create", "configmap", name, "--from-literal=k=v")
		d.acknowledged = append(d.acknowledged, name)
	}
	return d
}

// nearlyFullRefusesWrites leaves less room than etcd needs to write safely, but not yet none,
// and returns the file that fills the disk.
func (d *smallDisk) nearlyFullRefusesWrites(t *testing.T) string {
	nearly := fill(t, d.mnt, 20<<20)
	var refused rawResult
	probes := 0
	poll.Eventually(t, 5*time.Second, "a create refused on a nearly full disk", func() (bool, string) {
		// Writes within the guard's last look at the disk (100ms) still go through.
		probes++
		refused = d.l.faultRequest("POST", "/api/v1/namespaces/faults/configmaps", "application/json",
			fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe-%d"}}`, probes), 10*time.Second)
		if refused.code == http.StatusCreated {
			d.acknowledged = append(d.acknowledged, fmt.Sprintf("probe-%d", probes))
		}
		return refused.code == http.StatusInsufficientStorage, refused.String()
	})
	wantContains(t, "the refusal", refused.body, "disk")
	wantContains(t, "the refusal", refused.body, "free")
	return nearly
}

// fullDiskRefusesWritesAndServesReads fills the disk to the last byte: nothing may make etcd
// write now, while reads and health are answered. It returns the file that fills the disk.
func (d *smallDisk) fullDiskRefusesWritesAndServesReads(t *testing.T) string {
	l := d.l
	// Writes accepted just before the refusals began reach etcd's database within its 100ms
	// batch interval, and need room.
	time.Sleep(300 * time.Millisecond)
	full := fill(t, d.mnt, 0)
	time.Sleep(300 * time.Millisecond) // past the guard's look at the disk
	for _, w := range writesTo("faults", "before-0") {
		if r := l.faultRequest(w.method, w.path, w.contentType, w.body, 10*time.Second); r.code != http.StatusInsufficientStorage || !strings.Contains(r.body, "insufficient storage") {
			t.Errorf("%s on a full disk: %v, want 507 insufficient storage", w.name, r)
		}
	}
	stderr := l.fails(t, "", "-n", "faults", "create", "configmap", "by-kubectl")
	wantContains(t, "kubectl create on a full disk", stderr, "insufficient storage")

	// Reads and health are answered; the process is alive.
	for _, path := range []string{"/api/v1/namespaces/faults/configmaps/before-0", "/api/v1/namespaces/faults/configmaps",
		"/api/v1/namespaces/faults/configmaps?limit=2", "/readyz", "/livez", "/healthz"} {
		if r := l.faultRequest("GET", path, "", "", 10*time.Second); r.code != 200 {
			t.Errorf("GET %s on a full disk: %v, want 200", path, r)
		}
	}
	if !l.running() {
		t.Fatalf("lapis exited on a full disk: %v", l.exitErr())
	}
	wantContains(t, "lapis's log", l.log.String(), "disk nearly full: refusing writes")
	return full
}

// writesResumeWhenSpaceIsBack removes the files filling the disk: writes resume by themselves.
func (d *smallDisk) writesResumeWhenSpaceIsBack(t *testing.T, fillers ...string) {
	l := d.l
	for _, f := range fillers {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	poll.Eventually(t, 5*time.Second, "a create accepted once space is back", func() (bool, string) {
		r := l.faultRequest("POST", "/api/v1/namespaces/faults/configmaps", "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"after"}}`, 10*time.Second)
		return r.code == http.StatusCreated, r.String()
	})
	d.acknowledged = append(d.acknowledged, "after")
	l.must(t, "-n", "faults", "label", "configmap", "before-1", "x=y")
	wantContains(t, "lapis's log", l.log.String(), "disk space available again")
	wantNames(t, l, d.acknowledged)
}

// cannotStartOnFullDisk restarts lapis on a full disk: it cannot start there (etcd may not,
// and lapis cannot write its kubeconfig) and says why instead of exiting silently.
func (d *smallDisk) cannotStartOnFullDisk(t *testing.T) {
	d.l.Stop(t)
	full := fill(t, d.mnt, 0)
	out, err := exec.Command(lapisBin, "serve", "--data-dir", d.l.dataDir, "--listen", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no space left on device") {
		t.Errorf("lapis started on a full disk: %v, want an exit saying the disk is full:\n%s", err, out)
	}
	if err := os.Remove(full); err != nil {
		t.Fatal(err)
	}
}

// restartWithLittleRoomWaitsForSpace restarts lapis with a little room (30 MiB: less than a WAL
// segment and than the write guard's need): it serves reads and refuses writes. etcd stopped
// with its last WAL segment preallocated whole; lapis cuts it back to its records before etcd
// opens (etcd would free and take back that space while preallocating its next segment: a race
// it lost, exiting, in most runs), which leaves room for the next segment. So writes wait for
// space only.
func (d *smallDisk) restartWithLittleRoomWaitsForSpace(t *testing.T) {
	l := d.l
	nearly := fill(t, d.mnt, 30<<20)
	l.start(t)
	wantNames(t, l, d.acknowledged)
	if r := l.faultRequest("GET", "/readyz", "", "", 10*time.Second); r.code != 200 {
		t.Errorf("readyz after a restart on a nearly full disk: %v", r)
	}
	d.refusedCreate(t, "after a restart on a nearly full disk", "late", "writes are refused until space is freed")
	if err := os.Remove(nearly); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 5*time.Second, "a create accepted once space is back, without a restart", func() (bool, string) {
		r := l.faultRequest("POST", "/api/v1/namespaces/faults/configmaps", "application/json",
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late"}}`, 10*time.Second)
		return r.code == http.StatusCreated, r.String()
	})
	d.acknowledged = append(d.acknowledged, "late")
}

// secondRestartWithLittleRoomWaitsForRestart restarts with a little room again: the last
// segment holds only its records now, nothing is freed for the next one, which does not fit:
// etcd would exit at its next cut, so writes wait for a restart, not just for space.
func (d *smallDisk) secondRestartWithLittleRoomWaitsForRestart(t *testing.T) {
	l := d.l
	l.Stop(t)
	nearly := fill(t, d.mnt, 30<<20)
	l.start(t)
	wantNames(t, l, d.acknowledged)
	if r := l.faultRequest("GET", "/readyz", "", "", 10*time.Second); r.code != 200 {
		t.Errorf("readyz after a second restart on a nearly full disk: %v", r)
	}
	d.refusedCreate(t, "after a second restart on a nearly full disk", "last", "restarted")
	if err := os.Remove(nearly); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // past the guard's look at the disk
	d.refusedCreate(t, "once space is back, before a restart", "last", "restarted")
	l.Restart(t)
	l.must(t, "-n", "faults", "create", "configmap", "last")
	wantNames(t, l, append(d.acknowledged, "last"))
}

// refusedCreate wants the create of ConfigMap name refused with 507 and a body saying want.
func (d *smallDisk) refusedCreate(t *testing.T, when, name, want string) {
	t.Helper()
	r := d.l.faultRequest("POST", "/api/v1/namespaces/faults/configmaps", "application/json",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`"}}`, 10*time.Second)
	if r.code != http.StatusInsufficientStorage || !strings.Contains(r.body, want) {
		t.Errorf("create %s: %v, want 507 saying %q", when, r, want)
	}
}

func wantNames(t *testing.T, l *lapisProc, names []string) {
	t.Helper()
	got := l.must(t, "-n", "faults", "get", "configmaps", "-o", "name")
	for _, n := range names {
		wantContains(t, "configmaps after the disk was full", got, "configmap/"+n+"\n")
	}
}

// externalEtcd is an etcd process of its own, on fixed ports and a data dir that survive
// restarts.
type externalEtcd struct {
	bin, dir, client, peer string
	cmd                    *exec.Cmd
	exited                 chan struct{}
}

func startExternalEtcd(t *testing.T) *externalEtcd {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("no etcd binary on PATH (Debian: apt-get install etcd-server) for the external etcd test")
	}
	e := &externalEtcd{bin: bin, dir: t.TempDir(),
		client: fmt.Sprintf("http://127.0.0.1:%d", freePort(t)), peer: fmt.Sprintf("http://127.0.0.1:%d", freePort(t))}
	e.start(t)
	t.Cleanup(func() {
		_ = e.cmd.Process.Signal(syscall.SIGCONT)
		_ = e.cmd.Process.Kill()
		<-e.exited
	})
	return e
}

func (e *externalEtcd) start(t *testing.T) {
	t.Helper()
	e.cmd = exec.Command(e.bin, "--data-dir", filepath.Join(e.dir, "data"), "--listen-client-urls", e.client, "--advertise-client-urls", e.client,
		"--listen-peer-urls", e.peer, "--initial-advertise-peer-urls", e.peer, "--initial-cluster", "default="+e.peer)
	e.cmd.Stdout, e.cmd.Stderr = io.Discard, io.Discard
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(e.cmd, e.exited)
	poll.Eventually(t, 20*time.Second, "etcd answering", func() (bool, string) {
		resp, err := http.Get(e.client + "/health")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == 200, resp.Status
	})
}

// healthWant is what one health path answers.
type healthWant struct {
	path string
	code int
	body string // exact, after trimming the final newline
}

func checkHealth(t *testing.T, l *lapisProc, when string, wants []healthWant) {
	t.Helper()
	results := make([]rawResult, len(wants))
	var wg sync.WaitGroup
	for i, w := range wants {
		wg.Go(func() { results[i] = l.faultRequest("GET", w.path, "", "", 10*time.Second) })
	}
	wg.Wait()
	for i, w := range wants {
		r := results[i]
		if r.err != nil || r.code != w.code || strings.TrimSuffix(r.body, "\n") != w.body || r.took > 3*time.Second {
			t.Errorf("%s: GET %s: %v\nwant %d %q within 3s", when, w.path, r, w.code, w.body)
		}
	}
}

// hooksOK is kube-apiserver's post-start hooks that lapis runs, each finished, in kube's order.
const hooksOK = "[+]poststarthook/start-apiserver-admission-initializer ok\n[+]poststarthook/generic-apiserver-start-informers ok\n" +
	"[+]poststarthook/start-apiextensions-informers ok\n" +
	"[+]poststarthook/start-apiextensions-controllers ok\n[+]poststarthook/crd-informer-synced ok\n" +
	"[+]poststarthook/start-system-namespaces-controller ok\n[+]poststarthook/start-cluster-authentication-info-controller ok\n" +
	"[+]poststarthook/start-kube-apiserver-identity-lease-controller ok\n" +
	"[+]poststarthook/start-kube-apiserver-identity-lease-garbage-collector ok\n[+]poststarthook/start-legacy-token-tracking-controller ok\n[+]poststarthook/start-service-ip-repair-controllers ok\n" +
	"[+]poststarthook/rbac/bootstrap-roles ok\n[+]poststarthook/scheduling/bootstrap-system-priority-classes ok\n" +
	"[+]poststarthook/priority-and-fairness-config-producer ok\n[+]poststarthook/bootstrap-controller ok\n" +
	"[+]poststarthook/start-kubernetes-service-cidr-controller ok\n" +
	"[+]poststarthook/start-kube-aggregator-informers ok\n[+]poststarthook/apiservice-status-local-available-controller ok\n" +
	"[+]poststarthook/apiservice-status-remote-available-controller ok\n[+]poststarthook/apiservice-registration-controller ok\n" +
	"[+]poststarthook/apiservice-discovery-controller ok\n[+]poststarthook/kube-apiserver-autoregistration ok\n" +
	"[+]autoregister-completion ok\n" +
	"[+]poststarthook/apiservice-openapi-controller ok\n[+]poststarthook/apiservice-openapiv3-controller ok\n"

var (
	healthyAnswers = []healthWant{
		{"/healthz", 200, "ok"},
		{"/livez", 200, "ok"},
		{"/readyz", 200, "ok"},
		{"/readyz?verbose", 200, "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n" + hooksOK + "[+]shutdown ok\nreadyz check passed"},
		{"/livez/etcd", 200, "ok"},
	}
	// kube-apiserver: every failing health endpoint answers 500, naming the failed checks
	// without their reasons; a single check's path gives the reason.
	outageAnswers = []healthWant{
		{"/healthz", 500, "[+]ping ok\n[+]log ok\n[+]loopback-serving-certificate ok\n[-]etcd failed: reason withheld\n" + hooksOK + "healthz check failed"},
		{"/livez", 500, "[+]ping ok\n[+]log ok\n[+]loopback-serving-certificate ok\n[-]etcd failed: reason withheld\n" + hooksOK + "livez check failed"},
		{"/readyz", 500, "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[-]etcd-readiness failed: reason withheld\n[+]informer-sync ok\n" +
			hooksOK + "[+]shutdown ok\nreadyz check failed"},
		{"/healthz?exclude=etcd", 200, "ok"},
		{"/readyz/shutdown", 200, "ok"},
	}
)

// TestExternalEtcdOutage: while an external etcd is stopped or killed, health checks answer
// within their 2s timeout (failing), requests fail with 503 or 504 within a bounded time
// instead of hanging or answering 500, and lapis recovers by itself when etcd is back.
func TestExternalEtcdOutage(t *testing.T) {
	start := time.Now()
	etcd := startExternalEtcd(t)
	l := startLapis(t, "--etcd-servers", etcd.client)
	l.must(t, "create", "namespace", "faults")
	l.must(t, "-n", "faults", "create", "configmap", "kept", "--from-literal=k=v")
	checkHealth(t, l, "etcd up", healthyAnswers)

	// GET and write while etcd cannot answer: 504 (timeout) or 503 (unavailable), within
	// lapis's bound on a storage call (10s) and some slack.
	failFast := func(when string, code int) {
		t.Helper()
		reqs := []writeRequest{
			{"get", "GET", "/api/v1/namespaces/faults/configmaps/kept", "", ""},
			{"list", "GET", "/api/v1/namespaces/faults/configmaps", "", ""},
			{"patch", "PATCH", "/api/v1/namespaces/faults/configmaps/kept", "application/merge-patch+json", `{"data":{"k":"x"}}`},
			{"create namespace", "POST", "/api/v1/namespaces", "application/json", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"during"}}`},
		}
		results := make([]rawResult, len(reqs))
		var wg sync.WaitGroup
		for i, r := range reqs {
			wg.Go(func() { results[i] = l.faultRequest(r.method, r.path, r.contentType, r.body, 30*time.Second) })
		}
		wg.Wait()
		for i, r := range results {
			if r.err != nil || r.code != code || r.took > 13*time.Second {
				t.Errorf("%s: %s: %v, want %d within 13s", when, reqs[i].name, r, code)
			}
		}
	}
	recoveries := 0
	recovered := func(when string) {
		t.Helper()
		poll.Eventually(t, 20*time.Second, "readiness "+when, func() (bool, string) {
			r := l.faultRequest("GET", "/readyz", "", "", 5*time.Second)
			return r.code == 200, r.String()
		})
		checkHealth(t, l, when, healthyAnswers)
		l.must(t, "-n", "faults", "patch", "configmap", "kept", "--type=merge", "-p", `{"data":{"after":"`+when+`"}}`)
		l.must(t, "-n", "faults", "get", "configmap", "kept")
		// Lists served from the watch cache see what was written since.
		recoveries++
		name := fmt.Sprintf("recovered-%d", recoveries)
		l.must(t, "-n", "faults", "create", "configmap", name)
		poll.Eventually(t, 5*time.Second, "the watch cache catching up "+when, func() (bool, string) {
			r := l.faultRequest("GET", "/api/v1/namespaces/faults/configmaps", "", "", 10*time.Second)
			return r.code == 200 && strings.Contains(r.body, `"name":"`+name+`"`), r.String()
		})
	}

	// Stopped: connections stay open, nothing answers.
	if err := etcd.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // as kube's, an etcd check probes at most every half timeout (1s)
	checkHealth(t, l, "etcd stopped", outageAnswers)
	failFast("etcd stopped", http.StatusGatewayTimeout) // connected, no answer
	if err := etcd.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	recovered("after SIGCONT")

	// Killed: connections refused.
	_ = etcd.cmd.Process.Kill()
	<-etcd.exited
	time.Sleep(1100 * time.Millisecond)
	checkHealth(t, l, "etcd killed", outageAnswers)
	failFast("etcd killed", http.StatusServiceUnavailable) // not connected
	etcd.start(t)
	recovered("after etcd restarted")

	if !l.running() {
		t.Fatalf("lapis exited: %v", l.exitErr())
	}
	if strings.Contains(l.log.String(), "panic") {
		t.Errorf("lapis logged a panic")
	}
	t.Logf("took %v", time.Since(start).Round(time.Millisecond))
}

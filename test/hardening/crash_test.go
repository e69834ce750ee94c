package hardening

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/lapisproc"
)

const (
	crashNS      = "hz-crash"
	crashWriters = 8
	crashRounds  = 3
	crashPerKind = 3 // objects of each kind per writer
)

// version is an object's state: absent, or present with a resourceVersion and content.
type version struct {
	exists bool
	rv     int64
	// content is the canonical JSON of data (ConfigMap) or spec (Widget); mark is its "v",
	// unique to the write that set it.
	content, mark string
}

func (v version) String() string {
	if !v.exists {
		return "absent"
	}
	return fmt.Sprintf("rv %d %s", v.rv, v.content)
}

// tracked is one object a writer owns: its last acknowledged state and the states that
// writes sent but not acknowledged may have left (after one, the writer leaves it alone).
type tracked struct {
	path, collection, kind, name string
	acked                        version
	pending                      []version
	history                      []string // acknowledged writes, for failure reports
}

// TestCrashConsistency kills lapis (SIGKILL) while 8 clients write, restarts it on the same data
// dir and checks that every acknowledged write is there with its acknowledged resourceVersion.
// minCrashAcks is how many acknowledged writes a round needs before its kill tests anything.
const minCrashAcks = 20

func TestCrashConsistency(t *testing.T) {
	seed, _ := loadSettings(t)
	l := startLapis(t)
	c := l.Client(10 * time.Second)
	defer c.CloseIdleConnections()
	mustDo(t, l, c, "POST", "/api/v1/namespaces", mJSON, mustJSON(obj("v1", "Namespace", "", crashNS, nil, false)))
	mustDo(t, l, c, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", mJSON, mustJSON(crd(widgetsCRD, "widgets", crGroup, "Widget", true, false)))
	waitFor200(t, l, c, "/apis/"+crGroup+"/v1/namespaces/"+crashNS+"/widgets")

	var objs [crashWriters][]*tracked
	for w := range crashWriters {
		for i := range crashPerKind {
			name := fmt.Sprintf("c%d-%d", w, i)
			coll := "/api/v1/namespaces/" + crashNS + "/configmaps"
			objs[w] = append(objs[w], &tracked{kind: "ConfigMap", name: name, collection: coll, path: coll + "/" + name})
			name = fmt.Sprintf("w%d-%d", w, i)
			coll = "/apis/" + crGroup + "/v1/namespaces/" + crashNS + "/widgets"
			objs[w] = append(objs[w], &tracked{kind: "Widget", name: name, collection: coll, path: coll + "/" + name})
		}
	}
	r := rand.New(rand.NewPCG(seed, 1000))
	for round := range crashRounds {
		var killed atomic.Bool
		var acks, refused atomic.Int64
		var wg sync.WaitGroup
		for w := range crashWriters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cw := &crashWriter{l: l, c: l.Client(10 * time.Second), r: rand.New(rand.NewPCG(seed, uint64(round*100+w))),
					id: fmt.Sprintf("%d.%d", round, w), objs: objs[w], killed: &killed, acks: &acks, refused: &refused}
				defer cw.c.CloseIdleConnections()
				cw.run()
			}()
		}
		// Kill once writes are flowing (on a loaded machine the first ones may take seconds), at
		// a seeded moment after that.
		for deadline := time.Now().Add(30 * time.Second); acks.Load() < minCrashAcks && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Duration(800+r.IntN(1500)) * time.Millisecond)
		killed.Store(true)
		l.Kill()
		wg.Wait()
		uncertain := 0
		for w := range objs {
			for _, o := range objs[w] {
				if len(o.pending) > 0 {
					uncertain++
				}
			}
		}
		t.Logf("round %d: killed after %d acknowledged writes (%d refused), %d objects with a write in flight", round, acks.Load(), refused.Load(), uncertain)
		if acks.Load() < minCrashAcks {
			t.Errorf("round %d: only %d writes acknowledged before the kill: too few to test anything", round, acks.Load())
		}

		if err := l.Start(t.Context()); err != nil {
			t.Fatalf("round %d: restarting lapis: %v", round, err)
		}
		waitFor200(t, l, c, "/apis/"+crGroup+"/v1/namespaces/"+crashNS+"/widgets")
		verifyCrash(t, l, c, round, objs[:])
		if t.Failed() {
			return
		}
	}
}

// verifyCrash reads every tracked object back, checks it against what was acknowledged, and
// makes what it finds the new acknowledged state.
func verifyCrash(t *testing.T, l *lapisproc.Proc, c *http.Client, round int, objs [][]*tracked) {
	t.Helper()
	var maxRV int64
	listed := map[string]version{}
	for _, coll := range []string{"/api/v1/namespaces/" + crashNS + "/configmaps", "/apis/" + crGroup + "/v1/namespaces/" + crashNS + "/widgets"} {
		code, body := do(t, l, c, "GET", coll, "", nil)
		if code != http.StatusOK {
			t.Fatalf("round %d: GET %s: %d %s", round, coll, code, truncate(body, 500))
		}
		var list struct {
			Items []map[string]any `json:"items"`
		}
		if err := json.Unmarshal([]byte(body), &list); err != nil {
			t.Fatalf("round %d: GET %s: %v", round, coll, err)
		}
		for _, item := range list.Items {
			v, name := versionOf(item)
			listed[coll+"/"+name] = v
		}
	}
	for _, ws := range objs {
		for _, o := range ws {
			code, body := do(t, l, c, "GET", o.path, "", nil)
			var got version
			switch code {
			case http.StatusNotFound:
			case http.StatusOK:
				var m map[string]any
				if err := json.Unmarshal([]byte(body), &m); err != nil {
					t.Fatalf("round %d: GET %s: %v", round, o.path, err)
				}
				got, _ = versionOf(m)
			default:
				t.Fatalf("round %d: GET %s: %d %s", round, o.path, code, truncate(body, 500))
			}
			if lv := listed[o.path]; got != lv {
				t.Errorf("round %d: %s: GET finds %s, LIST finds %s", round, o.path, got, lv)
			}
			delete(listed, o.path)
			if !o.matches(got) {
				t.Errorf("round %d: %s after the restart is %s; acknowledged: %s; unacknowledged writes: %v\n  acknowledged writes: %s",
					round, o.path, got, o.acked, o.pending, strings.Join(o.history, "; "))
			}
			o.acked, o.pending = got, nil
			o.history = append(o.history, fmt.Sprintf("after restart %d: %s", round, got))
			maxRV = max(maxRV, got.rv)
		}
	}
	for path := range listed {
		if writerName.MatchString(path[strings.LastIndex(path, "/")+1:]) {
			t.Errorf("round %d: LIST finds %s, which no acknowledged or attempted write created", round, path)
		}
	}
	// A write after the restart gets a newer resourceVersion than anything acknowledged before.
	code, body := do(t, l, c, "POST", "/api/v1/namespaces/"+crashNS+"/configmaps", mJSON,
		mustJSON(obj("v1", "ConfigMap", crashNS, fmt.Sprintf("probe-%d", round), map[string]any{"data": map[string]any{"v": "probe"}}, false)))
	if code != http.StatusCreated {
		t.Fatalf("round %d: creating a probe after the restart: %d %s", round, code, truncate(body, 500))
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(body), &m)
	if v, _ := versionOf(m); v.rv <= maxRV {
		t.Errorf("round %d: a write after the restart got resourceVersion %d, not above the %d acknowledged before", round, v.rv, maxRV)
	}
}

// writerName matches the names of the objects the writers own.
var writerName = regexp.MustCompile(`^[cw][0-9]+-[0-9]+$`)

// matches reports whether got is a state o may be in: the acknowledged one, or one an
// unacknowledged write may have left (with a newer resourceVersion).
func (o *tracked) matches(got version) bool {
	if got == o.acked {
		return true
	}
	for _, p := range o.pending {
		if !p.exists && !got.exists {
			return true
		}
		if p.exists && got.exists && got.mark == p.mark && got.rv > o.acked.rv {
			return true
		}
	}
	return false
}

// versionOf reads an object's state and name.
func versionOf(m map[string]any) (version, string) {
	meta, _ := m["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	rv, _ := strconv.ParseInt(fmt.Sprint(meta["resourceVersion"]), 10, 64)
	content := m["data"]
	if m["kind"] == "Widget" {
		content = m["spec"]
	}
	mark := ""
	if cm, ok := content.(map[string]any); ok {
		mark = fmt.Sprint(cm["v"])
	}
	return version{exists: true, rv: rv, content: string(mustJSON(content)), mark: mark}, name
}

// crashWriter creates, updates, patches and deletes its own objects until lapis is killed.
type crashWriter struct {
	l       *lapisproc.Proc
	c       *http.Client
	r       *rand.Rand
	id      string
	seq     int
	objs    []*tracked
	killed  *atomic.Bool
	acks    *atomic.Int64
	refused *atomic.Int64
}

func (cw *crashWriter) run() {
	for !cw.killed.Load() {
		var live []*tracked
		for _, o := range cw.objs {
			if len(o.pending) == 0 {
				live = append(live, o)
			}
		}
		if len(live) == 0 {
			return
		}
		cw.write(live[cw.r.IntN(len(live))])
	}
}

// write sends one write to o and records its outcome.
func (cw *crashWriter) write(o *tracked) {
	cw.seq++
	mark := fmt.Sprintf("%s.%d", cw.id, cw.seq)
	field := "data"
	if o.kind == "Widget" {
		field = "spec"
	}
	content := map[string]any{"v": mark, "n": strconv.Itoa(cw.r.IntN(1000))}
	full := func() map[string]any {
		apiVersion := "v1"
		if o.kind == "Widget" {
			apiVersion = crGroup + "/v1"
		}
		return obj(apiVersion, o.kind, crashNS, o.name, map[string]any{field: content}, false)
	}
	var method, path, ctype, op string
	var body []byte
	want := version{exists: true, mark: mark}
	switch {
	case !o.acked.exists:
		op, method, path, ctype, body = "create", "POST", o.collection, mJSON, mustJSON(full())
	default:
		switch cw.r.IntN(6) {
		case 0:
			o2 := full()
			metaOf(o2)["resourceVersion"] = strconv.FormatInt(o.acked.rv, 10)
			op, method, path, ctype, body = "update", "PUT", o.path, mJSON, mustJSON(o2)
		case 1:
			op, method, path, ctype, body = "merge-patch", "PATCH", o.path, mMerge, mustJSON(map[string]any{field: content})
		case 2:
			op, method, path, ctype = "json-patch", "PATCH", o.path, mJSONP
			body = mustJSON([]any{map[string]any{"op": "replace", "path": "/" + field + "/v", "value": mark}})
		case 3:
			op, method, path, ctype, body = "apply", "PATCH", o.path+"?fieldManager=crash&force=true", mApply, mustJSON(full())
		default:
			op, method, path, want = "delete", "DELETE", o.path, version{}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := cw.l.NewRequest(ctx, method, path, body)
	if err != nil {
		panic(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := cw.c.Do(req)
	var answer []byte
	if err == nil {
		answer, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	switch {
	case err != nil || resp.StatusCode >= 500:
		// Not acknowledged: it may or may not have happened.
		o.pending = append(o.pending, want)
	case resp.StatusCode >= 300:
		// Refused: nothing changed. A conflict or an error other than the crash's is worth
		// seeing, but is no data loss.
		cw.refused.Add(1)
		if !cw.killed.Load() {
			o.history = append(o.history, fmt.Sprintf("%s %s refused: %d %s", op, mark, resp.StatusCode, truncate(string(answer), 200)))
		}
	default:
		cw.acks.Add(1)
		if op == "delete" {
			o.acked = version{}
		} else {
			var m map[string]any
			if json.Unmarshal(answer, &m) != nil {
				o.pending = append(o.pending, want) // acknowledged, but with an unreadable answer
				return
			}
			o.acked, _ = versionOf(m)
		}
		o.history = append(o.history, fmt.Sprintf("%s %s → %s", op, mark, o.acked))
		if len(o.history) > 12 {
			o.history = o.history[len(o.history)-12:]
		}
	}
}

func do(t *testing.T, l *lapisproc.Proc, c *http.Client, method, path, ctype string, body []byte) (int, string) {
	t.Helper()
	req, err := l.NewRequest(context.Background(), method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func mustDo(t *testing.T, l *lapisproc.Proc, c *http.Client, method, path, ctype string, body []byte) {
	t.Helper()
	if code, answer := do(t, l, c, method, path, ctype, body); code >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, code, truncate(answer, 500))
	}
}

// waitFor200 polls a GET until it answers 200 (a CRD's resource being served), for 30 s.
func waitFor200(t *testing.T, l *lapisproc.Proc, c *http.Client, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, answer := do(t, l, c, "GET", path, "", nil)
		if code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d %s, still after 30s", path, code, truncate(answer, 500))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

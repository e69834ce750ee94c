package sharedetcd

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/discovery"
)

// resource is a stored resource at the version it is read at.
type resource struct {
	group, version, name string
	namespaced           bool
}

func (r resource) id() string {
	if r.group == "" {
		return r.name + "." + r.version
	}
	return r.name + "." + r.version + "." + r.group
}

func (r resource) prefix() string {
	if r.group == "" {
		return "/api/" + r.version
	}
	return "/apis/" + r.group + "/" + r.version
}

// listPath is the resource's collection in all namespaces.
func (r resource) listPath() string { return r.prefix() + "/" + r.name }

func (r resource) objectPath(namespace, name string) string {
	if namespace != "" {
		return r.prefix() + "/namespaces/" + namespace + "/" + r.name + "/" + name
	}
	return r.prefix() + "/" + r.name + "/" + name
}

// notStored are resources that can be listed but are not read from etcd.
var notStored = map[string]string{
	"componentstatuses": "kube-apiserver probes its etcd and components at each read",
}

// discoverResources is every resource s serves that can be listed and read, at its preferred
// version, and the corpus's custom resource at both its versions, sorted by id.
func discoverResources(t *testing.T, s *server) []resource {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(s.config, s.http)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := dc.ServerPreferredResources()
	// The corpus's APIService names a group nothing serves: its discovery fails, the rest is
	// there.
	var partial *discovery.ErrGroupDiscoveryFailed
	if err != nil && !errors.As(err, &partial) {
		t.Fatalf("%s: discovery: %v", s.name, err)
	}
	// Both versions of the corpus's custom resource, whichever discovery prefers.
	rs := []resource{{group: "sd.example.com", version: "v1", name: "widgets", namespaced: true},
		{group: "sd.example.com", version: "v2", name: "widgets", namespaced: true}}
	for _, l := range lists {
		group, version, _ := strings.Cut(l.GroupVersion, "/")
		if version == "" {
			group, version = "", group
		}
		for _, ar := range l.APIResources {
			if strings.Contains(ar.Name, "/") || notStored[ar.Name] != "" ||
				!slices.Contains(ar.Verbs, "list") || !slices.Contains(ar.Verbs, "get") {
				continue
			}
			rs = append(rs, resource{group: group, version: version, name: ar.Name, namespaced: ar.Namespaced})
		}
	}
	slices.SortFunc(rs, func(a, b resource) int { return strings.Compare(a.id(), b.id()) })
	return slices.CompactFunc(rs, func(a, b resource) bool { return a.id() == b.id() })
}

// recording is what one server served of every resource.
type recording struct {
	server string
	lists  map[string]*listRecord // by resource id
}

// listRecord is one resource's list (JSON and Table), and a GET of each of its items.
type listRecord struct {
	failed  string // "CODE: body" when the list was refused
	rv      string // the list's resourceVersion
	items   []map[string]any
	objects map[string]any // GET of each item, by objectKey
	table   map[string]any
}

// dumpEnv names a directory where each recording is written as JSON (label.json), to look
// closer at a difference.
const dumpEnv = "SHAREDETCD_DUMP"

// dump writes rec to $SHAREDETCD_DUMP/label.json when it is set.
func dump(t *testing.T, rec *recording, label string) {
	t.Helper()
	dir := os.Getenv(dumpEnv)
	if dir == "" {
		return
	}
	out := map[string]any{}
	for id, l := range rec.lists {
		out[id] = map[string]any{"failed": l.failed, "resourceVersion": l.rv, "objects": l.objects, "table": l.table}
	}
	b, err := json.MarshalIndent(map[string]any{"server": rec.server, "lists": out}, "", " ")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, label+".json"), b, 0o644)
	}
	if err != nil {
		t.Logf("dumping %s: %v", label, err)
	}
}

// record reads every resource of rs from s.
func record(t *testing.T, s *server, rs []resource) *recording {
	t.Helper()
	rec := &recording{server: s.name, lists: map[string]*listRecord{}}
	for _, r := range rs {
		rec.lists[r.id()] = recordList(t, s, r)
	}
	return rec
}

func recordList(t *testing.T, s *server, r resource) *listRecord {
	t.Helper()
	lr := &listRecord{objects: map[string]any{}}
	a := s.do(t, "GET", r.listPath(), "", "", nil)
	if a.code != http.StatusOK {
		lr.failed = fmt.Sprintf("%d: %s", a.code, shorten(decode(a.body), 300))
		return lr
	}
	var list struct {
		Metadata struct{ ResourceVersion string }
		Items    []map[string]any
	}
	if err := json.Unmarshal(a.body, &list); err != nil {
		t.Fatalf("%s: list %s: %v", s.name, r.id(), err)
	}
	lr.rv, lr.items = list.Metadata.ResourceVersion, list.Items
	for _, item := range list.Items {
		md, _ := item["metadata"].(map[string]any)
		namespace, _ := md["namespace"].(string)
		name, _ := md["name"].(string)
		g := s.do(t, "GET", r.objectPath(namespace, name), "", "", nil)
		if g.code != http.StatusOK {
			lr.objects[objectKey(md)] = fmt.Sprintf("GET answered %d: %s", g.code, shorten(decode(g.body), 300))
			continue
		}
		lr.objects[objectKey(md)] = decode(g.body)
	}
	tbl := s.do(t, "GET", r.listPath(), "", tableType, nil)
	if tbl.code != http.StatusOK {
		lr.table = map[string]any{"refused": fmt.Sprintf("%d: %s", tbl.code, shorten(decode(tbl.body), 300))}
	} else {
		lr.table, _ = decode(tbl.body).(map[string]any)
	}
	return lr
}

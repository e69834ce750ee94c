package againstkube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
)

// This file holds what builtin_test.go and invalid_test.go share: requests with an Accept header
// and Warning headers kept, whole-body comparison after masking, and Protobuf decoding.

// Accept headers of the three representations compared.
const (
	acceptJSON     = "application/json"
	acceptTable    = "application/json;as=Table;v=v1;g=meta.k8s.io"
	acceptProtobuf = "application/vnd.kubernetes.protobuf"
)

// kubeOnly (KUBEDIFF_KUBE_ONLY=1) sends the built-in cases to kube alone and checks only that
// kube answers each as the case expects: a check of the fixtures themselves, for when lapis does
// not serve a type yet.
var kubeOnly = os.Getenv("KUBEDIFF_KUBE_ONLY") == "1"

// answer is a response with what of its headers is compared.
type answer struct {
	response
	warnings []string
}

// call sends r with the given Accept header and keeps the Warning headers.
func (s *target) call(r request, accept string) answer {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := s.newRequest(ctx, r.method, r.path, r.body)
	if err != nil {
		return answer{response: response{err: err}}
	}
	req.Header.Set("Accept", accept)
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return answer{response: response{err: err}}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{response: response{code: resp.StatusCode, body: b, err: err}, warnings: resp.Header.Values("Warning")}
}

// pair is one request's answers; lapis is empty in kube-only mode.
type pair struct {
	lapis, kube answer
	panics      []string
}

// exchangeWith sends forLapis to lapis and forKube to kube at the same time.
func exchangeWith(forLapis, forKube request, accept string) pair {
	var p pair
	if kubeOnly {
		p.kube = env.kube.call(forKube, accept)
		return p
	}
	before := env.lapis.panics.count()
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.kube = env.kube.call(forKube, accept)
	}()
	p.lapis = env.lapis.call(forLapis, accept)
	<-done
	p.panics = env.lapis.panics.since(before)
	return p
}

// expectAndCompare fails t unless kube answered r with want (the fixture's own check), then
// (unless kube-only) unless lapis answered as kube: same code, same Warning headers, and the same
// body once both are decoded and masked.
func expectAndCompare(t *testing.T, r request, accept string, p pair, want int) {
	t.Helper()
	if p.kube.err != nil || p.kube.code != want {
		t.Errorf("fixture: kube answered %s with %d %.600s (%v); the case expects %d", r, p.kube.code, p.kube.body, p.kube.err, want)
	}
	if kubeOnly {
		t.Logf("kube: %d %s", p.kube.code, strings.Join(summarize(p.kube.body), " | "))
		return
	}
	for _, pn := range p.panics {
		t.Errorf("%s: lapis logged a recovered panic: %s", r, pn)
	}
	if p.lapis.err != nil {
		t.Errorf("%s: lapis: %v", r, p.lapis.err)
		return
	}
	var diffs []string
	if p.lapis.code != p.kube.code {
		diffs = append(diffs, fmt.Sprintf("code: kube %d, lapis %d", p.kube.code, p.lapis.code))
	}
	if wl, wk := sortedWarnings(p.lapis.warnings), sortedWarnings(p.kube.warnings); !slices.Equal(wl, wk) {
		diffs = append(diffs, fmt.Sprintf("Warning headers: kube %q, lapis %q", wk, wl))
	}
	bl, bk := decodeBody(p.lapis.body, accept), decodeBody(p.kube.body, accept)
	diffJSON("", mask(bk), mask(bl), &diffs)
	if len(diffs) > 0 {
		const most = 25
		if len(diffs) > most {
			diffs = append(diffs[:most], fmt.Sprintf("… and %d more", len(diffs)-most))
		}
		t.Errorf("%s (Accept %s): lapis differs from kube:\n  %s", r, accept, strings.Join(diffs, "\n  "))
	}
}

// sortedWarnings drops the warn-code and agent of each Warning header (`299 - "text"`).
func sortedWarnings(ws []string) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		if i := strings.Index(w, `"`); i >= 0 {
			w = strings.Trim(w[i:], `"`)
		}
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}

// decodeBody is the body as a JSON value: Protobuf decoded through client-go's scheme, JSON
// decoded, anything else as its text.
func decodeBody(b []byte, accept string) any {
	if accept == acceptProtobuf && bytes.HasPrefix(b, protobufMagic) {
		v, err := decodeProtobuf(b)
		if err != nil {
			return "undecodable Protobuf: " + err.Error()
		}
		return v
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "text: " + strings.TrimSpace(string(b))
	}
	return v
}

var protobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// decodeProtobuf decodes a Protobuf body into the Go type client-go knows for its kind and turns
// that into JSON; kinds client-go does not know (APIService) are reduced to their envelope.
func decodeProtobuf(b []byte) (any, error) {
	var u runtime.Unknown
	if err := u.Unmarshal(b[len(protobufMagic):]); err != nil {
		return nil, err
	}
	gvk := schema.FromAPIVersionAndKind(u.APIVersion, u.Kind)
	if !clientscheme.Scheme.Recognizes(gvk) {
		return map[string]any{"apiVersion": u.APIVersion, "kind": u.Kind, "protobuf": "envelope only: client-go does not know the kind"}, nil
	}
	obj, _, err := protobuf.NewSerializer(clientscheme.Scheme, clientscheme.Scheme).Decode(b, nil, nil)
	if err != nil {
		return nil, err
	}
	j, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var v any
	return v, json.Unmarshal(j, &v)
}

// mask replaces, in a decoded body, the values two servers given the same requests rightly
// differ in. Keys are never dropped: a field only one server sets still shows.
//   - metadata: uid, creationTimestamp, resourceVersion, deletionTimestamp; managedFields times;
//   - the times the server stamps on conditions (lastTransitionTime, lastUpdateTime) and on a
//     DeviceTaintRule's taint (timeAdded);
//   - allocated values: clusterIP, clusterIPs, nodePort, healthCheckNodePort;
//   - within any string: UUIDs, the random suffix of kube-api-access-xxxxx volumes, and
//     resourceVersions in conflict messages;
//   - Table cells of columns that show a time or an allocated value;
//   - the credential-id kube records of the requesting user (a CertificateSigningRequest's
//     spec.extra): the harness reaches kube with a client certificate, lapis with a token.
func mask(v any) any { return maskIn("", v) }

var (
	maskedMetadata   = []string{"uid", "creationTimestamp", "resourceVersion", "deletionTimestamp"}
	maskedAnywhere   = []string{"clusterIP", "clusterIPs", "nodePort", "healthCheckNodePort"}
	maskedConditions = []string{"lastTransitionTime", "lastUpdateTime"}
	maskedColumns    = []string{"Age", "Created At", "Duration", "Last Schedule", "Last Seen", "First Seen", "Cluster-IP", "TimeAdded"}
	apiAccessVolume  = regexp.MustCompile(`kube-api-access-[a-z0-9]{5}`)
	servicePorts     = regexp.MustCompile(`:\d+/`) // "80:31234/TCP" in a Service's Port(s) cell
)

func maskIn(parent string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if k == "extra" && onlyCredentialID(e) {
				continue
			}
			switch {
			case parent == "metadata" && slices.Contains(maskedMetadata, k),
				parent == "managedFields" && k == "time",
				parent == "conditions" && slices.Contains(maskedConditions, k),
				parent == "taint" && k == "timeAdded",
				slices.Contains(maskedAnywhere, k):
				out[k] = "<masked>"
			default:
				out[k] = maskIn(k, e)
			}
		}
		if v["kind"] == "Table" {
			maskTableCells(out)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = maskIn(parent, e) // list elements keep their list's key as parent
		}
		if parent == "managedFields" {
			// Entries are ordered by their times, which are masked: compare them by manager.
			slices.SortStableFunc(out, func(a, b any) int {
				return strings.Compare(fmt.Sprint(nested(map[string]any{"e": a}, "e", "manager")), fmt.Sprint(nested(map[string]any{"e": b}, "e", "manager")))
			})
		}
		return out
	case string:
		s := normalize(v)
		return apiAccessVolume.ReplaceAllString(s, "kube-api-access-XXXXX")
	}
	return v
}

func onlyCredentialID(v any) bool {
	m, ok := v.(map[string]any)
	_, has := m["authentication.kubernetes.io/credential-id"]
	return ok && len(m) == 1 && has
}

func maskTableCells(table map[string]any) {
	cols, _ := table["columnDefinitions"].([]any)
	rows, _ := table["rows"].([]any)
	// kube prints an IPAddress's age in a cell no column names (printIPAddress has three cells
	// for two columns): a cell past the columns is masked like a named Age cell.
	for _, r := range rows {
		cells, _ := nested(map[string]any{"r": r}, "r", "cells").([]any)
		for i := len(cols); i < len(cells); i++ {
			cells[i] = "<masked>"
		}
	}
	for i, c := range cols {
		name, _ := nested(map[string]any{"c": c}, "c", "name").(string)
		for _, r := range rows {
			cells, _ := nested(map[string]any{"r": r}, "r", "cells").([]any)
			if i >= len(cells) {
				continue
			}
			switch {
			case slices.Contains(maskedColumns, name):
				cells[i] = "<masked>"
			case name == "Port(s)":
				if s, ok := cells[i].(string); ok {
					cells[i] = servicePorts.ReplaceAllString(s, ":NODEPORT/")
				}
			}
		}
	}
}

// diffJSON appends to out, one line per path, where lapis's value differs from kube's.
func diffJSON(path string, kube, lapis any, out *[]string) {
	switch k := kube.(type) {
	case map[string]any:
		l, ok := lapis.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(k)+len(l))
		for key := range k {
			keys = append(keys, key)
		}
		for key := range l {
			if _, ok := k[key]; !ok {
				keys = append(keys, key)
			}
		}
		sort.Strings(keys)
		for _, key := range keys {
			kv, inK := k[key]
			lv, inL := l[key]
			switch {
			case !inK:
				*out = append(*out, fmt.Sprintf("%s.%s: only lapis has it: %s", path, key, short(lv)))
			case !inL:
				*out = append(*out, fmt.Sprintf("%s.%s: only kube has it: %s", path, key, short(kv)))
			default:
				diffJSON(path+"."+key, kv, lv, out)
			}
		}
		return
	case []any:
		l, ok := lapis.([]any)
		if !ok {
			break
		}
		for i := range max(len(k), len(l)) {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(l):
				*out = append(*out, fmt.Sprintf("%s: only kube has it: %s", p, short(k[i])))
			case i >= len(k):
				*out = append(*out, fmt.Sprintf("%s: only lapis has it: %s", p, short(l[i])))
			default:
				diffJSON(p, k[i], l[i], out)
			}
		}
		return
	}
	if !jsonEqual(kube, lapis) {
		p := path
		if p == "" {
			p = "body"
		}
		*out = append(*out, fmt.Sprintf("%s: kube %s, lapis %s", p, short(kube), short(lapis)))
	}
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 400 {
		return fmt.Sprintf("%s… (%d bytes)", b[:400], len(b))
	}
	return string(b)
}

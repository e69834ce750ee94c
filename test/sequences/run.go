package sequences

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Namespace is where sequences write.
const Namespace = "sequences"

// Target is a server sequences run against.
type Target struct {
	Name   string
	host   string
	client *http.Client
}

// NewTarget is the server kubeconfig names.
func NewTarget(name, kubeconfig string) (*Target, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cfg.QPS, cfg.Burst = -1, -1
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &Target{Name: name, host: cfg.Host, client: client}, nil
}

// Outcome is what one request of a step answered, masked of what differs between servers
// by design (uids, resourceVersions, times, allocated addresses) and of the object's name.
type Outcome struct {
	Request  string   `json:"request"`
	Code     int      `json:"code"`
	Warnings []string `json:"warnings,omitempty"`
	Body     any      `json:"body"`
}

// Run runs s against t as the object name (s.Name unless shrinking) and returns each
// request's outcome, the object's final state last. The object is deleted at the end.
func (t *Target) Run(ctx context.Context, s Sequence, name string) ([]Outcome, error) {
	path := s.Kind.path(Namespace, name)
	// A run cut short leaves its object behind.
	if _, _, err := t.exchange(ctx, "DELETE", path, "", nil); err != nil {
		return nil, err
	}
	var out []Outcome
	for _, st := range s.Steps {
		o, err := t.step(ctx, s.Kind, path, name, st)
		if err != nil {
			return nil, err
		}
		out = append(out, o...)
	}
	final, err := t.do(ctx, "GET", path, "", nil, name)
	if err != nil {
		return nil, err
	}
	if _, err := t.do(ctx, "DELETE", path, "", nil, name); err != nil {
		return nil, err
	}
	return append(out, final), nil
}

const (
	applyType     = "application/apply-patch+yaml"
	mergeType     = "application/merge-patch+json"
	jsonPatchType = "application/json-patch+json"
	strategicType = "application/strategic-merge-patch+json"
	jsonType      = "application/json"
)

func (t *Target) step(ctx context.Context, k *kind, path, name string, st Step) ([]Outcome, error) {
	q := url.Values{"fieldManager": {st.Manager}}
	if st.Force {
		q.Set("force", "true")
	}
	if st.DryRun {
		q.Set("dryRun", "All")
	}
	body := named(st.Body, name)
	one := func(method, p, contentType string) ([]Outcome, error) {
		o, err := t.do(ctx, method, p+"?"+q.Encode(), contentType, body, name)
		return []Outcome{o}, err
	}
	switch st.Op {
	case opApply:
		return one("PATCH", path, applyType)
	case opMerge:
		return one("PATCH", path, mergeType)
	case opJSONPatch:
		return one("PATCH", path, jsonPatchType)
	case opStrategic:
		return one("PATCH", path, strategicType)
	case opCreate:
		return one("POST", path[:strings.LastIndex(path, "/")], jsonType)
	case opStatusApply:
		return one("PATCH", path+"/status", applyType)
	case opStatusMerge:
		return one("PATCH", path+"/status", mergeType)
	case opScaleApply:
		return one("PATCH", path+"/scale", applyType)
	case opScaleMerge:
		return one("PATCH", path+"/scale", mergeType)
	case opUpdate:
		return t.update(ctx, k, path, name, st, q)
	case opScaleUpdate:
		return t.update(ctx, k, path+"/scale", name, st, q)
	}
	return nil, fmt.Errorf("unknown op %q", st.Op)
}

// update reads the object, changes it by the step's merge patch and writes it back.
func (t *Target) update(ctx context.Context, k *kind, path, name string, st Step, q url.Values) ([]Outcome, error) {
	read, current, err := t.exchange(ctx, "GET", path, "", nil)
	if err != nil {
		return nil, err
	}
	got := outcome("GET", path, name, read, current)
	if read.StatusCode != http.StatusOK {
		apiVersion, kind := k.apiVersion, k.kind
		if strings.HasSuffix(path, "/scale") {
			apiVersion, kind = "autoscaling/v1", "Scale"
		}
		current = []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q}}`, apiVersion, kind, name))
	}
	patch, err := json.Marshal(st.Body)
	if err != nil {
		return nil, err
	}
	changed, err := jsonpatch.MergePatch(current, patch)
	if err != nil {
		return nil, fmt.Errorf("changing %s: %w", current, err)
	}
	var next map[string]any
	if err := json.Unmarshal(changed, &next); err != nil {
		return nil, err
	}
	if meta, ok := next["metadata"].(map[string]any); ok && !st.KeepResourceVersion {
		delete(meta, "resourceVersion")
	}
	o, err := t.do(ctx, "PUT", path+"?"+q.Encode(), jsonType, next, name)
	return []Outcome{got, o}, err
}

// named is body with the object's name set where the generator left the sequence's.
func named(body any, name string) any {
	m, ok := body.(map[string]any)
	if !ok {
		return body
	}
	meta, ok := m["metadata"].(map[string]any)
	if !ok || meta["name"] == nil {
		return body
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	withName := make(map[string]any, len(meta))
	for k, v := range meta {
		withName[k] = v
	}
	withName["name"] = name
	out["metadata"] = withName
	return out
}

// do sends one request and returns its masked outcome.
func (t *Target) do(ctx context.Context, method, path, contentType string, body any, name string) (Outcome, error) {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return Outcome{}, err
		}
	}
	resp, answer, err := t.exchange(ctx, method, path, contentType, data)
	if err != nil {
		return Outcome{}, err
	}
	return outcome(method, path, name, resp, answer), nil
}

// outcome is a request's answer, masked.
func outcome(method, path, name string, resp *http.Response, answer []byte) Outcome {
	o := Outcome{Request: method + " " + strings.ReplaceAll(path, name, "OBJ"), Code: resp.StatusCode, Warnings: resp.Header.Values("Warning")}
	var decoded any
	if err := json.Unmarshal(answer, &decoded); err != nil {
		decoded = string(answer)
	}
	o.Body = canonical(mask(decoded, name))
	return o
}

// canonical orders what kube-apiserver orders by chance or by the clock: the causes of an
// apply's conflicts (its field manager lists them manager by manager, the managers in map
// order) and managedFields entries (by operation, then the second of their time, which two
// servers need not share, then manager).
func canonical(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if details, ok := m["details"].(map[string]any); ok {
		if causes, ok := details["causes"].([]any); ok && m["reason"] == "Conflict" {
			slices.SortStableFunc(causes, func(a, b any) int { return strings.Compare(member(a, "message"), member(b, "message")) })
		} else if ok && m["reason"] == "Invalid" {
			sortInvalid(m, causes)
		}
	}
	if meta, ok := m["metadata"].(map[string]any); ok {
		if entries, ok := meta["managedFields"].([]any); ok {
			slices.SortStableFunc(entries, func(a, b any) int {
				return strings.Compare(member(a, "operation")+" "+member(a, "manager")+" "+member(a, "subresource")+" "+member(a, "apiVersion"),
					member(b, "operation")+" "+member(b, "manager")+" "+member(b, "subresource")+" "+member(b, "apiVersion"))
			})
		}
	}
	return m
}

// sortInvalid orders an Invalid status's causes, and the list its message makes of them: kube
// validates a custom resource's properties in map order.
func sortInvalid(status map[string]any, causes []any) {
	items := make([]string, len(causes))
	for i, c := range causes {
		items[i] = member(c, "field") + ": " + member(c, "message")
	}
	message, _ := status["message"].(string)
	listed := "[" + strings.Join(items, ", ") + "]"
	if len(causes) < 2 || !strings.HasSuffix(message, listed) {
		return
	}
	slices.SortStableFunc(causes, func(a, b any) int {
		return strings.Compare(member(a, "field")+member(a, "message"), member(b, "field")+member(b, "message"))
	})
	slices.Sort(items)
	status["message"] = strings.TrimSuffix(message, listed) + "[" + strings.Join(items, ", ") + "]"
}

func member(v any, name string) string {
	m, _ := v.(map[string]any)
	s, _ := m[name].(string)
	return s
}

func (t *Target) exchange(ctx context.Context, method, path, contentType string, data []byte) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, t.host+path, bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "sequences")
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %s %s: %w", t.Name, method, path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %s %s: %w", t.Name, method, path, err)
	}
	return resp, answer, nil
}

// Masked are the fields that differ between servers by design.
var (
	maskedMeta   = []string{"uid", "resourceVersion", "creationTimestamp"}
	apiAccess    = regexp.MustCompile(`kube-api-access-[a-z0-9]{5}`)
	allocatedIPs = []string{"clusterIP", "clusterIPs"}
)

// mask replaces what differs between servers by design with fixed values.
func mask(v any, name string) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = mask(e, name)
		}
		if meta, ok := v["metadata"].(map[string]any); ok {
			for _, k := range maskedMeta {
				if _, ok := meta[k]; ok {
					meta[k] = "*"
				}
			}
		}
		if details, ok := v["details"].(map[string]any); ok {
			delete(details, "uid")
		}
		for _, k := range append(allocatedIPs, "nodePort", "time") {
			if _, ok := v[k]; ok {
				v[k] = "*"
			}
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = mask(e, name)
		}
		return v
	case string:
		return apiAccess.ReplaceAllString(strings.ReplaceAll(v, name, "OBJ"), "kube-api-access-*")
	}
	return v
}

package againstkube

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/kubernetes/pkg/registry/rbac/validation"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
)

// This file compares authorization: kube-apiserver runs RBAC with its bootstrap policy (the
// harness starts kube-controller-manager, whose clusterrole-aggregation controller fills the
// aggregated roles), and lapis must answer as it does. The identities are users bound to the
// bootstrap roles and to custom ones (testdata/authz-setup.yaml), reached through the admin's
// impersonation as `kubectl --as` does, plus anonymous requests and a ServiceAccount token. For
// each identity, verb and resource it compares
//   - the access review (SelfSubjectAccessReview, or SubjectAccessReview for anonymous, who may
//     not create the former): allowed, denied, reason and evaluation error;
//   - the request itself (writes as dry runs): refusals (401, 403) in full — code, reason,
//     message, details — and, where kube does not refuse, that lapis does not either;
// then real `kubectl auth can-i`, `can-i --list`, `auth whoami` and a refused `kubectl get`, and
// the refusals that are not a plain RBAC denial: server-side apply that would create, RBAC's
// escalation checks on Role and RoleBinding writes, impersonation without the right to it.

const team = "team" // the namespace of testdata/authz-setup.yaml

// identity is a user as the admin impersonates it (Impersonate-User, Impersonate-Group).
type identity struct {
	name   string // of the subtest
	user   string
	groups []string
	// anonymous: requests are sent without credentials, and access is asked with a
	// SubjectAccessReview (anonymous may not create a SelfSubjectAccessReview).
	anonymous bool
}

var authzIdentities = []identity{
	{name: "no binding", user: "nobody"},
	{name: "view", user: "viewer"},
	{name: "edit", user: "editor"},
	{name: "admin", user: "teamadmin"},
	{name: "cluster-admin", user: "root"},
	{name: "custom role to group", user: "dana", groups: []string{"devs"}},
	{name: "serviceaccount", user: "system:serviceaccount:team:robot", groups: []string{"system:serviceaccounts", "system:serviceaccounts:team"}},
	{name: "binding to missing role", user: "ghost"},
	{name: "anonymous", user: user.Anonymous, groups: []string{user.AllUnauthenticated}, anonymous: true},
}

// headers are the impersonation headers for id.
func (id identity) headers() http.Header {
	h := http.Header{}
	h.Set("Impersonate-User", id.user)
	for _, g := range id.groups {
		h.Add("Impersonate-Group", g)
	}
	return h
}

// info is who kube's impersonation makes of id: system:authenticated is added unless a group
// says authenticated or unauthenticated already.
func (id identity) info() user.Info {
	groups := slices.Clone(id.groups)
	if !slices.Contains(groups, user.AllUnauthenticated) && !slices.Contains(groups, user.AllAuthenticated) {
		groups = append(groups, user.AllAuthenticated)
	}
	return &user.DefaultInfo{Name: id.user, Groups: groups}
}

// kubectlArgs are the flags of `kubectl --as`.
func (id identity) kubectlArgs() []string {
	args := []string{"--as=" + id.user}
	for _, g := range id.groups {
		args = append(args, "--as-group="+g)
	}
	return args
}

var authzVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// authzRow is a resource of the matrix, as `kubectl auth can-i VERB RESOURCE -n team` asks
// about it (namespace team even for cluster-scoped resources, as kubectl sends it), and where
// its requests go.
type authzRow struct {
	prefix, group, resource, subresource string
	kind                                 string // for request bodies
	name                                 string // the review's resource name (a row restricted to one object)
	clusterScoped                        bool
	object                               string // the object requests name
}

var authzRows = []authzRow{
	{prefix: "/api/v1", resource: "configmaps", kind: "ConfigMap", object: "cm1"},
	{prefix: "/api/v1", resource: "secrets", kind: "Secret", object: "s2"},
	{prefix: "/api/v1", resource: "secrets", kind: "Secret", name: "s1", object: "s1"},
	{prefix: "/api/v1", resource: "pods", kind: "Pod", object: "p1"},
	{prefix: "/api/v1", resource: "pods", subresource: "exec", object: "p1"},
	{prefix: "/api/v1", resource: "pods", subresource: "log", object: "p1"},
	{prefix: "/apis/apps/v1", group: "apps", resource: "deployments", kind: "Deployment", object: "d1"},
	{prefix: "/apis/apps/v1", group: "apps", resource: "deployments", subresource: "scale", kind: "Scale", object: "d1"},
	{prefix: "/api/v1", resource: "namespaces", kind: "Namespace", clusterScoped: true, object: team},
	{prefix: "/api/v1", resource: "nodes", kind: "Node", clusterScoped: true, object: "n1"},
	{prefix: "/apis/rbac.authorization.k8s.io/v1", group: "rbac.authorization.k8s.io", resource: "clusterroles", kind: "ClusterRole", clusterScoped: true, object: "authz-widgets"},
	{prefix: "/apis/rbac.authorization.k8s.io/v1", group: "rbac.authorization.k8s.io", resource: "rolebindings", kind: "RoleBinding", object: "viewer"},
	{prefix: "/apis/apiextensions.k8s.io/v1", group: "apiextensions.k8s.io", resource: "customresourcedefinitions", kind: "CustomResourceDefinition", clusterScoped: true, object: "widgets.kubediff.example.com"},
	{prefix: "/apis/kubediff.example.com/v1", group: "kubediff.example.com", resource: "widgets", kind: "Widget", object: "w1"},
}

var authzURLs = []string{"/healthz", "/version", "/api", "/apis", "/metrics", "/debug/pprof/", "/openapi/v2"}

func (r authzRow) String() string {
	s := r.resource
	if r.group != "" {
		s += "." + r.group
	}
	if r.subresource != "" {
		s += "/" + r.subresource
	}
	if r.name != "" {
		s += " named " + r.name
	}
	return s
}

func (r authzRow) collection() string {
	if r.clusterScoped {
		return r.prefix + "/" + r.resource
	}
	return r.prefix + "/namespaces/" + team + "/" + r.resource
}

// body is what create and update send: enough for kube to get past decoding where the verb is
// allowed (its answer then need not be a success: only refusals are compared in full).
func (r authzRow) body(name string) string {
	apiVersion := strings.TrimPrefix(strings.TrimPrefix(r.prefix, "/api/"), "/apis/")
	switch {
	case r.subresource == "scale":
		apiVersion = "autoscaling/v1"
	case r.subresource != "":
		return ""
	}
	extra := ""
	switch r.kind {
	case "RoleBinding":
		extra = `,"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"friend"}]`
	case "ClusterRole":
		extra = `,"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]`
	}
	return fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q}%s}`, apiVersion, r.kind, name, extra)
}

// request is the request of verb on r, writes as dry runs and collection deletes selecting
// nothing, so that a wrong answer cannot change what later cells see; false where the verb has
// no request (list of a subresource, list of one named object).
func (r authzRow) request(verb string) (request, bool) {
	object := r.collection() + "/" + r.object
	if r.subresource != "" {
		object += "/" + r.subresource
	}
	named := r.name != "" || r.subresource != ""
	switch verb {
	case "get":
		return request{method: "GET", path: object}, true
	case "list":
		return request{method: "GET", path: r.collection()}, !named
	case "watch":
		// From resourceVersion 0: without one, kube waits about 3 s for its watch cache to be
		// known fresh before it answers.
		return request{method: "GET", path: r.collection() + "?watch=true&resourceVersion=0&timeoutSeconds=5"}, !named
	case "create":
		if r.subresource != "" {
			return request{method: "POST", path: object + "?dryRun=All", contentType: jsonType, body: r.body(r.object)}, true
		}
		return request{method: "POST", path: r.collection() + "?dryRun=All", contentType: jsonType, body: r.body("authz-new")}, r.name == ""
	case "update":
		return request{method: "PUT", path: object + "?dryRun=All", contentType: jsonType, body: r.body(r.object)}, true
	case "patch":
		return request{method: "PATCH", path: object + "?dryRun=All", contentType: mergeType, body: `{}`}, true
	case "delete":
		return request{method: "DELETE", path: object + "?dryRun=All"}, true
	case "deletecollection":
		return request{method: "DELETE", path: r.collection() + "?dryRun=All&labelSelector=authz-selects%3Dnothing"}, !named
	}
	return request{}, false
}

// access is one cell of the matrix: a verb on a resource row, or GET of a non-resource URL.
type access struct {
	verb string
	row  *authzRow
	path string
}

func (a access) String() string {
	if a.row == nil {
		return a.verb + " " + a.path
	}
	return a.verb + " " + a.row.String()
}

func authzCells() []access {
	var cells []access
	for i := range authzRows {
		for _, v := range authzVerbs {
			cells = append(cells, access{verb: v, row: &authzRows[i]})
		}
	}
	for _, p := range authzURLs {
		cells = append(cells, access{verb: "get", path: p})
	}
	return cells
}

func (a access) attributes(u user.Info) authorizer.AttributesRecord {
	if a.row == nil {
		return authorizer.AttributesRecord{User: u, Verb: a.verb, Path: a.path}
	}
	return authorizer.AttributesRecord{User: u, Verb: a.verb, Namespace: team, APIGroup: a.row.group,
		Resource: a.row.resource, Subresource: a.row.subresource, Name: a.row.name, ResourceRequest: true}
}

// review is the access review asking about a for id.
func (a access) review(id identity) request {
	var spec authorizationv1.SubjectAccessReviewSpec
	if a.row == nil {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Verb: a.verb, Path: a.path}
	} else {
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Namespace: team, Verb: a.verb,
			Group: a.row.group, Resource: a.row.resource, Subresource: a.row.subresource, Name: a.row.name}
	}
	if id.anonymous {
		spec.User, spec.Groups = id.user, id.groups
		b, _ := json.Marshal(authorizationv1.SubjectAccessReview{Spec: spec})
		return request{method: "POST", path: "/apis/authorization.k8s.io/v1/subjectaccessreviews", contentType: jsonType,
			body: `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",` + string(b[1:])}
	}
	b, _ := json.Marshal(authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: spec.ResourceAttributes, NonResourceAttributes: spec.NonResourceAttributes}})
	return request{method: "POST", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", contentType: jsonType,
		body: `{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview",` + string(b[1:])}
}

// credential is what a request authenticates with.
type credential int

const (
	adminCredential credential = iota // the admin's (impersonating, with impersonation headers)
	robotToken                        // a token of ServiceAccount team/robot from the TokenRequest API
	badToken                          // a bearer token no authenticator accepts
	noCredential                      // anonymous
)

// caller is who sends a request.
type caller struct {
	cred        credential
	impersonate http.Header
}

func (id identity) caller() caller {
	if id.anonymous {
		return caller{cred: noCredential}
	}
	return caller{impersonate: id.headers()}
}

// authzEnv is what TestAuthz's subtests share.
type authzEnv struct {
	targets []*target    // kube, then lapis unless kube-only
	bare    *http.Client // TLS without credentials, for tokens of their own and anonymous
	tokens  sync.Map     // *target → robot's token
	rules   *kubeRBAC    // kube's RBAC objects, for the reasons kube may give
}

// do sends r as c. The body is read when asked for, and always for answers of 300 and up
// (never for a watch that was allowed: it would stream).
func (e *authzEnv) do(s *target, r request, c caller, wantBody bool) response {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := s.newRequest(ctx, r.method, r.path, r.body)
	if err != nil {
		return response{err: err}
	}
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	for k, vs := range c.impersonate {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	client := s.client
	switch c.cred {
	case robotToken:
		tok, _ := e.tokens.Load(s)
		if tok == nil {
			return response{err: errors.New("no token of ServiceAccount team/robot (TokenRequest failed at setup)")}
		}
		client = e.bare
		req.Header.Set("Authorization", "Bearer "+tok.(string))
	case badToken:
		client = e.bare
		req.Header.Set("Authorization", "Bearer not-a-token-any-server-issued")
	case noCredential:
		client = e.bare
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return response{err: err, elapsed: time.Since(start)}
	}
	defer resp.Body.Close()
	if !wantBody && resp.StatusCode < 300 {
		return response{code: resp.StatusCode, elapsed: time.Since(start)}
	}
	b, err := io.ReadAll(resp.Body)
	return response{code: resp.StatusCode, body: b, err: err, elapsed: time.Since(start)}
}

// send sends r as c to every target at once; lapis's answer is empty in kube-only mode.
func (e *authzEnv) send(r request, c caller, wantBody bool) exchange {
	var x exchange
	if kubeOnly {
		x.kube = e.do(env.kube, r, c, wantBody)
		return x
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		x.kube = e.do(env.kube, r, c, wantBody)
	}()
	x.lapis = e.do(env.lapis, r, c, wantBody)
	<-done
	return x
}

// parallel runs f(0..n-1) on a few goroutines (the machine has two cores; the servers do the
// work).
func parallel(n int, f func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// diffs collects a subtest's differences and reports the first few, with their count.
type diffs []string

func (d diffs) report(t *testing.T, what string) {
	t.Helper()
	if len(d) == 0 {
		return
	}
	const most = 30
	shown := d
	if len(shown) > most {
		shown = shown[:most]
	}
	more := ""
	if len(d) > most {
		more = fmt.Sprintf("\n… and %d more", len(d)-most)
	}
	t.Errorf("%d of %s differ from kube:\n%s%s", len(d), what, strings.Join(shown, "\n"), more)
}

func TestAuthz(t *testing.T) {
	servers(t)
	e := &authzEnv{
		targets: []*target{env.kube},
		// Loopback only, and only to send credentials of no worth (none, a token of a
		// throw-away ServiceAccount): the admin's clients trust each server's CA, this one
		// must not carry the admin's credentials.
		bare: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}},
	}
	if !kubeOnly {
		e.targets = append(e.targets, env.lapis)
		before := env.lapis.panics.count()
		defer func() {
			for _, p := range env.lapis.panics.since(before) {
				t.Errorf("lapis logged a recovered panic: %s", p)
			}
		}()
	}
	if !strings.Contains(lapisControllers, "clusterrole-aggregation-controller") {
		t.Errorf("kube-controller-manager runs without clusterrole-aggregation-controller: lapisControllers (harness_test.go) must list it, " +
			"as lapis aggregates ClusterRoles itself; until then kube's view, edit and admin lack authz-widgets' rules")
	}
	authzSetup(t, e)
	e.rules = fetchKubeRBAC(t)

	t.Run("access reviews", func(t *testing.T) { testAccessReviews(t, e) })
	t.Run("requests", func(t *testing.T) { testAuthzRequests(t, e) })
	t.Run("kubectl", func(t *testing.T) { testKubectlAuth(t, e) })
	t.Run("refusals", func(t *testing.T) { testRefusals(t, e) })
}

// authzSetup creates testdata/authz-setup.yaml on each server, gets a token of robot, and waits
// until each server's authorizer sees the bindings and the aggregated roles.
func authzSetup(t *testing.T, e *authzEnv) {
	docs := setupDocuments(t)
	for _, s := range e.targets {
		for _, d := range docs {
			r := request{method: "POST", path: d.collection, contentType: jsonType, body: d.json}
			if resp := s.do(r); resp.code != http.StatusCreated && resp.code != http.StatusConflict {
				t.Fatalf("%s: setup: %s: %d %s %v", s.name, r, resp.code, resp.body, resp.err)
			}
		}
		tr := request{method: "POST", path: "/api/v1/namespaces/team/serviceaccounts/robot/token", contentType: jsonType,
			body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":3600}}`}
		resp := s.do(tr)
		var tok struct {
			Status struct{ Token string } `json:"status"`
		}
		if resp.code != http.StatusCreated || json.Unmarshal(resp.body, &tok) != nil || tok.Status.Token == "" {
			t.Errorf("%s: %s: %d %.300s (%v): the cases with robot's token fail", s.name, tr, resp.code, resp.body, resp.err)
		} else {
			e.tokens.Store(s, tok.Status.Token)
		}
	}

	// The authorizer reads from informers, and roles are aggregated by a controller: wait for
	// the last of each (the pod admission of create needs team's default ServiceAccount too).
	sentinels := []struct {
		id    identity
		a     access
		allow bool // else: denied with a reason
		why   string
	}{
		{authzIdentities[1], access{verb: "list", row: &authzRows[0]}, true, "RoleBinding viewer"},
		{authzIdentities[3], access{verb: "create", row: &authzRows[11]}, true, "RoleBinding teamadmin"},
		{authzIdentities[4], access{verb: "delete", row: &authzRows[9]}, true, "ClusterRoleBinding authz-root"},
		{authzIdentities[5], access{verb: "patch", row: &authzRows[0]}, true, "Role devs and its binding"},
		{authzIdentities[6], access{verb: "list", row: &authzRows[9]}, true, "ClusterRoleBinding authz-robot"},
		{authzIdentities[6], access{verb: "impersonate", row: &authzRow{resource: "users", name: "viewer"}}, true, "ClusterRoleBinding authz-impersonate-viewer"},
		{authzIdentities[7], access{verb: "get", row: &authzRows[0]}, false, "RoleBinding ghost"},
		{authzIdentities[1], access{verb: "watch", row: &authzRows[13]}, true,
			"ClusterRole authz-widgets aggregated into view by kube-controller-manager's clusterrole-aggregation-controller (the harness's lapisControllers must list it)"},
		{authzIdentities[3], access{verb: "watch", row: &authzRows[13]}, true, "ClusterRole authz-widgets aggregated into admin through view and edit"},
	}
	var wg sync.WaitGroup
	for _, s := range e.targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(20 * time.Second)
			for {
				var missing []string
				if s.do(request{method: "GET", path: "/api/v1/namespaces/team/serviceaccounts/default"}).code != http.StatusOK {
					missing = append(missing, "ServiceAccount team/default")
				}
				for _, c := range sentinels {
					resp := e.do(s, c.a.review(c.id), c.id.caller(), true)
					var st authorizationv1.SubjectAccessReviewStatus
					ok := resp.code == http.StatusCreated && json.Unmarshal(rawField(resp.body, "status"), &st) == nil &&
						st.Allowed == c.allow && (c.allow || st.Reason != "")
					if !ok {
						missing = append(missing, c.why)
					}
				}
				if len(missing) == 0 {
					return
				}
				if time.Now().After(deadline) {
					t.Errorf("%s: after 20 s the authorizer still does not see: %s", s.name, strings.Join(missing, "; "))
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
}

// rawField is the raw JSON of a top-level field of body (nil if there is none).
func rawField(body []byte, field string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	return m[field]
}

type setupDocument struct{ collection, json string }

// setupDocuments reads testdata/authz-setup.yaml: each document and where it is created.
func setupDocuments(t *testing.T) []setupDocument {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "authz-setup.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plural := map[string]string{"Namespace": "namespaces", "ServiceAccount": "serviceaccounts", "ConfigMap": "configmaps",
		"Secret": "secrets", "Role": "roles", "RoleBinding": "rolebindings", "ClusterRole": "clusterroles",
		"ClusterRoleBinding": "clusterrolebindings"}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var docs []setupDocument
	for {
		var obj struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return docs
		} else if err != nil {
			t.Fatalf("testdata/authz-setup.yaml: %v", err)
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		if err := json.Unmarshal(raw, &obj); err != nil || plural[obj.Kind] == "" {
			t.Fatalf("testdata/authz-setup.yaml: a document of kind %q (%v)", obj.Kind, err)
		}
		path := "/apis/" + obj.APIVersion
		if obj.APIVersion == "v1" {
			path = "/api/v1"
		}
		if obj.Metadata.Namespace != "" {
			path += "/namespaces/" + obj.Metadata.Namespace
		}
		docs = append(docs, setupDocument{collection: path + "/" + plural[obj.Kind], json: string(raw)})
	}
}

// kubeRBAC is kube's Roles, ClusterRoles and bindings once set up, for kube's own rule resolver:
// where several bindings allow a request, RBAC names the first it visits, in the order of an
// informer's map, so kube may name any of them and lapis may too.
type kubeRBAC struct {
	roles               map[string]*rbacv1.Role
	roleBindings        map[string][]*rbacv1.RoleBinding
	clusterRoles        map[string]*rbacv1.ClusterRole
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
}

func (k *kubeRBAC) GetRole(_ context.Context, namespace, name string) (*rbacv1.Role, error) {
	if r, ok := k.roles[namespace+"/"+name]; ok {
		return r, nil
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("role"), name)
}

func (k *kubeRBAC) ListRoleBindings(_ context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	return k.roleBindings[namespace], nil
}

func (k *kubeRBAC) GetClusterRole(_ context.Context, name string) (*rbacv1.ClusterRole, error) {
	if r, ok := k.clusterRoles[name]; ok {
		return r, nil
	}
	return nil, apierrors.NewNotFound(rbacv1.Resource("clusterrole"), name)
}

func (k *kubeRBAC) ListClusterRoleBindings(context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	return k.clusterRoleBindings, nil
}

func fetchKubeRBAC(t *testing.T) *kubeRBAC {
	t.Helper()
	const base = "/apis/rbac.authorization.k8s.io/v1/"
	get := func(resource string, into any) {
		resp := env.kube.must(t, request{method: "GET", path: base + resource}, http.StatusOK)
		if err := json.Unmarshal(resp.body, into); err != nil {
			t.Fatalf("kube: %s: %v", resource, err)
		}
	}
	var roles rbacv1.RoleList
	var roleBindings rbacv1.RoleBindingList
	var clusterRoles rbacv1.ClusterRoleList
	var clusterRoleBindings rbacv1.ClusterRoleBindingList
	get("roles", &roles)
	get("rolebindings", &roleBindings)
	get("clusterroles", &clusterRoles)
	get("clusterrolebindings", &clusterRoleBindings)
	k := &kubeRBAC{roles: map[string]*rbacv1.Role{}, roleBindings: map[string][]*rbacv1.RoleBinding{}, clusterRoles: map[string]*rbacv1.ClusterRole{}}
	for i := range roles.Items {
		k.roles[roles.Items[i].Namespace+"/"+roles.Items[i].Name] = &roles.Items[i]
	}
	for i := range roleBindings.Items {
		ns := roleBindings.Items[i].Namespace
		k.roleBindings[ns] = append(k.roleBindings[ns], &roleBindings.Items[i])
	}
	for i := range clusterRoles.Items {
		k.clusterRoles[clusterRoles.Items[i].Name] = &clusterRoles.Items[i]
	}
	for i := range clusterRoleBindings.Items {
		k.clusterRoleBindings = append(k.clusterRoleBindings, &clusterRoleBindings.Items[i])
	}
	return k
}

// allowedReasons are the reasons kube's RBAC may give for allowing attrs: one per binding that
// allows it.
func (k *kubeRBAC) allowedReasons(attrs authorizer.Attributes) []string {
	var reasons []string
	validation.NewDefaultRuleResolver(k, k, k, k).VisitRulesFor(context.Background(), attrs.GetUser(), attrs.GetNamespace(),
		func(source fmt.Stringer, rule *rbacv1.PolicyRule, _ error) bool {
			if rule != nil && rbac.RuleAllows(attrs, rule) {
				reasons = append(reasons, "RBAC: allowed by "+source.String())
			}
			return true
		})
	return reasons
}

// reviewAnswer is what an access review's answer is compared by.
type reviewAnswer struct {
	code   int
	status authorizationv1.SubjectAccessReviewStatus
	other  string // a body that is not the review
}

func readReview(r response) reviewAnswer {
	a := reviewAnswer{code: r.code}
	var v struct {
		Kind   string                                    `json:"kind"`
		Status authorizationv1.SubjectAccessReviewStatus `json:"status"`
	}
	if r.err != nil || json.Unmarshal(r.body, &v) != nil || !strings.HasSuffix(v.Kind, "AccessReview") {
		a.other = describe(r)
		return a
	}
	a.status = v.Status
	return a
}

func (a reviewAnswer) String() string {
	if a.other != "" {
		return a.other
	}
	return fmt.Sprintf("%d allowed=%t denied=%t reason=%q evaluationError=%q", a.code, a.status.Allowed, a.status.Denied, a.status.Reason, a.status.EvaluationError)
}

// testAccessReviews asks each server, for every identity and cell, whether it is allowed.
func testAccessReviews(t *testing.T, e *authzEnv) {
	cells := authzCells()
	for _, id := range authzIdentities {
		t.Run(id.name, func(t *testing.T) {
			answers := make([]exchange, len(cells))
			parallel(len(cells), func(i int) {
				c := caller{impersonate: id.headers()}
				if id.anonymous {
					c = caller{}
				}
				answers[i] = e.send(cells[i].review(id), c, true)
			})
			var d diffs
			var allowed []string
			for i, cell := range cells {
				k := readReview(answers[i].kube)
				if k.code != http.StatusCreated {
					t.Errorf("%s: kube answered the review with %s", cell, k)
					continue
				}
				var reasons []string
				if k.status.Allowed {
					allowed = append(allowed, cell.String())
					reasons = e.rules.allowedReasons(cell.attributes(id.info()))
					if !slices.Contains(reasons, k.status.Reason) {
						t.Errorf("%s: kube's reason %q is none of those its rule resolver gives %q (the test's model of kube is wrong)", cell, k.status.Reason, reasons)
					}
				}
				if kubeOnly {
					continue
				}
				l := readReview(answers[i].lapis)
				same := l.code == k.code && l.other == k.other && l.status.Allowed == k.status.Allowed &&
					l.status.Denied == k.status.Denied && l.status.EvaluationError == k.status.EvaluationError
				if k.status.Allowed {
					same = same && slices.Contains(reasons, l.status.Reason)
				} else {
					same = same && l.status.Reason == k.status.Reason
				}
				if !same {
					d = append(d, fmt.Sprintf("  %s:\n    kube:  %s\n    lapis: %s", cell, k, l))
				}
			}
			if kubeOnly {
				t.Logf("kube allows %d of %d: %s", len(allowed), len(cells), strings.Join(allowed, ", "))
			}
			d.report(t, fmt.Sprintf("%d access reviews", len(cells)))
		})
	}
	// Anonymous may not ask about itself.
	t.Run("anonymous self review", func(t *testing.T) {
		anon := identity{user: user.Anonymous, groups: []string{user.AllUnauthenticated}}
		r := access{verb: "get", path: "/healthz"}.review(anon)
		for _, c := range []caller{{impersonate: anon.headers()}, {cred: noCredential}} {
			x := e.send(r, c, true)
			if x.kube.code != http.StatusForbidden {
				t.Errorf("fixture: kube answered %s with %s; want 403", r, describe(x.kube))
			}
			if !kubeOnly {
				compare(t, r, x, allowance{})
			}
		}
	})
}

// testAuthzRequests sends each cell's request as each identity: what kube refuses, lapis must
// refuse with the same answer; what kube lets through, lapis must not refuse.
func testAuthzRequests(t *testing.T, e *authzEnv) {
	type cellRequest struct {
		access
		r request
	}
	var cells []cellRequest
	for _, a := range authzCells() {
		if a.row == nil {
			cells = append(cells, cellRequest{a, request{method: "GET", path: a.path}})
		} else if r, ok := a.row.request(a.verb); ok {
			cells = append(cells, cellRequest{a, r})
		}
	}
	for _, id := range authzIdentities {
		t.Run(id.name, func(t *testing.T) {
			answers := make([]exchange, len(cells))
			parallel(len(cells), func(i int) { answers[i] = e.send(cells[i].r, id.caller(), false) })
			var d diffs
			var refused []string
			for i, c := range cells {
				x := answers[i]
				kubeRefused := x.kube.code == http.StatusUnauthorized || x.kube.code == http.StatusForbidden
				if x.kube.err != nil {
					t.Errorf("%s: kube: %v", c.r, x.kube.err)
					continue
				}
				if kubeRefused {
					refused = append(refused, c.access.String())
				}

				if kubeOnly {
					continue
				}
				switch {
				case kubeRefused && (x.lapis.code != x.kube.code || !slices.Equal(summarize(x.lapis.body), summarize(x.kube.body))):
					d = append(d, fmt.Sprintf("  %s (%s):\n    kube:  %s\n    lapis: %s", c.r, c.access, describe(x.kube), describe(x.lapis)))
				case !kubeRefused && (x.lapis.err != nil || x.lapis.code == http.StatusUnauthorized || x.lapis.code == http.StatusForbidden):
					d = append(d, fmt.Sprintf("  %s (%s): kube lets it through (%d); lapis refuses:\n    lapis: %s", c.r, c.access, x.kube.code, describe(x.lapis)))
				}
			}
			if kubeOnly {
				t.Logf("kube refuses %d of %d: %s", len(refused), len(cells), strings.Join(refused, ", "))
			}
			d.report(t, fmt.Sprintf("%d requests", len(cells)))
		})
	}
}

// kubectlRunner runs the kubectl on PATH against one server: through a proxy on loopback that
// adds the admin's credentials (so --as is the admin impersonating), or straight to the server
// with a token of its own.
type kubectlRunner struct {
	bin, dir string
}

// kubectlResult is how a kubectl run ended, UIDs masked.
type kubectlResult struct {
	exit           int
	stdout, stderr string
	err            string // kubectl could not be run
}

func (r kubectlResult) String() string {
	if r.err != "" {
		return "error: " + r.err
	}
	if !strings.Contains(strings.TrimSpace(r.stdout+r.stderr), "\n") {
		return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.exit, r.stdout, r.stderr)
	}
	return fmt.Sprintf("exit %d\nstdout:\n%sstderr:\n%s", r.exit, r.stdout, r.stderr)
}

// run runs kubectl with args; stdout's lines sorted if asked (--list prints rules in the order
// the server visits its bindings).
func (k kubectlRunner) run(kubeconfig string, sortLines bool, args ...string) kubectlResult {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, append([]string{"--kubeconfig=" + kubeconfig, "--cache-dir=" + filepath.Join(filepath.Dir(kubeconfig), "cache")}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG=", "HOME="+k.dir)
	err := cmd.Run()
	var r kubectlResult
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.exit = exit.ExitCode()
	} else if err != nil {
		return kubectlResult{err: err.Error()}
	}
	r.stdout, r.stderr = normalize(stdout.String()), normalize(stderr.String())
	if sortLines {
		lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
		sort.Strings(lines)
		r.stdout = strings.Join(lines, "\n") + "\n"
	}
	return r
}

// kubeconfig writes a kubeconfig for s into dir: through an admin proxy when token is empty.
func (k kubectlRunner) kubeconfig(t *testing.T, s *target, name, token string) string {
	t.Helper()
	dir := filepath.Join(k.dir, s.name+"-"+name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	server, userBlock := s.host, fmt.Sprintf("{token: %q}", token)
	cluster := fmt.Sprintf("{server: %q, insecure-skip-tls-verify: true}", server)
	if token == "" {
		u, err := url.Parse(s.host)
		if err != nil {
			t.Fatal(err)
		}
		proxy := httptest.NewServer(&httputil.ReverseProxy{
			Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(u) },
			Transport: s.client.Transport,
		})
		t.Cleanup(proxy.Close)
		cluster, userBlock = fmt.Sprintf("{server: %q}", proxy.URL), "{}"
	}
	path := filepath.Join(dir, "kubeconfig")
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: %s}]\nusers: [{name: u, user: %s}]\n"+
		"contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n", cluster, userBlock)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// testKubectlAuth runs real kubectl: auth can-i for a sample of the matrix, can-i --list,
// auth whoami, a refused get, and --as refused to a ServiceAccount that may not impersonate.
func testKubectlAuth(t *testing.T, e *authzEnv) {
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skipf("kubectl is not on PATH: %v", err)
	}
	k := kubectlRunner{bin: bin, dir: t.TempDir()}
	admin := map[*target]string{}
	for _, s := range e.targets {
		admin[s] = k.kubeconfig(t, s, "admin", "")
		// Discovery cached once as the admin: can-i resolves resources from it, and an
		// identity that may not read discovery (anonymous) gets the same resolution.
		if out := k.run(admin[s], false, "api-resources", "-o", "name"); out.exit != 0 || out.err != "" {
			t.Fatalf("%s: kubectl api-resources: %s", s.name, out)
		}
	}

	type run struct {
		name string
		args []string
		sort bool // compare stdout's lines sorted: their order is the server's map order
		kc   func(s *target) string
		// inOrder runs come after the others, one at a time in the order listed: kube's
		// impersonation filter remembers (10 s) which way a requester last impersonated, and
		// words a later refusal after it.
		inOrder bool
	}
	var runs []run
	canI := [][]string{
		{"get", "configmaps"}, {"create", "configmaps"}, {"get", "secrets/s1"}, {"list", "secrets"},
		{"create", "pods", "--subresource=exec"}, {"update", "deployments.apps", "--subresource=scale"},
		{"delete", "namespaces"}, {"list", "nodes"}, {"watch", "widgets"}, {"create", "rolebindings"},
		{"get", "/healthz"}, {"get", "/metrics"},
	}
	byAdmin := func(s *target) string { return admin[s] }
	for _, id := range authzIdentities {
		for _, c := range canI {
			runs = append(runs, run{name: id.name + ": can-i " + strings.Join(c, " "),
				args: append(append([]string{"auth", "can-i", "-n", team}, c...), id.kubectlArgs()...), kc: byAdmin})
		}
	}
	for _, i := range []int{0, 1, 5, 6, 7, 8} {
		id := authzIdentities[i]
		runs = append(runs, run{name: id.name + ": can-i --list", args: append([]string{"auth", "can-i", "--list", "-n", team}, id.kubectlArgs()...), sort: true, kc: byAdmin})
	}
	for _, i := range []int{0, 5, 6} {
		id := authzIdentities[i]
		runs = append(runs, run{name: id.name + ": whoami", args: append([]string{"auth", "whoami"}, id.kubectlArgs()...), kc: byAdmin})
	}
	runs = append(runs,
		run{name: "get refused", args: []string{"get", "configmaps", "-n", team, "--as=nobody"}, kc: byAdmin},
		run{name: "get refused with dangling binding", args: []string{"get", "configmaps", "-n", team, "--as=ghost"}, kc: byAdmin},
		run{name: "create refused", args: []string{"create", "configmap", "x", "-n", team, "--as=viewer", "--dry-run=server"}, kc: byAdmin},
		run{name: "scale refused: kubectl reads the deployment first", args: []string{"scale", "deployment", "d1", "--replicas=2", "-n", team, "--as=dana", "--as-group=devs"}, kc: byAdmin},
	)
	tokenConfig := map[*target]string{}
	for _, s := range e.targets {
		if tok, ok := e.tokens.Load(s); ok {
			tokenConfig[s] = k.kubeconfig(t, s, "robot", tok.(string))
		}
	}
	byRobot := func(s *target) string { return tokenConfig[s] }
	runs = append(runs,
		run{name: "serviceaccount token: whoami", args: []string{"auth", "whoami"}, kc: byRobot},
		run{name: "serviceaccount token: can-i", args: []string{"auth", "can-i", "list", "nodes"}, kc: byRobot},
		run{name: "serviceaccount token: --as allowed, then refused as that user", args: []string{"get", "secrets", "-n", team, "--as=viewer"}, kc: byRobot, inOrder: true},
		run{name: "serviceaccount token: --as refused", args: []string{"get", "configmaps", "-n", team, "--as=editor"}, kc: byRobot, inOrder: true},
		run{name: "serviceaccount token: --as-group refused", args: []string{"get", "configmaps", "-n", team, "--as=viewer", "--as-group=devs"}, kc: byRobot, inOrder: true},
	)

	outs := make([]map[*target]kubectlResult, len(runs))
	do := func(i int) {
		outs[i] = map[*target]kubectlResult{}
		for _, s := range e.targets {
			kc := runs[i].kc(s)
			if kc == "" {
				outs[i][s] = kubectlResult{err: "no token of ServiceAccount team/robot (TokenRequest failed at setup)"}
				continue
			}
			outs[i][s] = k.run(kc, runs[i].sort, runs[i].args...)
		}
	}
	parallel(len(runs), func(i int) {
		if !runs[i].inOrder {
			do(i)
		}
	})
	for i := range runs {
		if runs[i].inOrder {
			do(i)
		}
	}
	var d diffs
	for i, r := range runs {
		kube := outs[i][env.kube]
		if kubeOnly {
			t.Logf("kubectl %s:\n%s", strings.Join(r.args, " "), kube)
			continue
		}
		if lapis := outs[i][env.lapis]; lapis != kube {
			d = append(d, fmt.Sprintf("  %s: kubectl %s\n    kube:  %s\n    lapis: %s", r.name, strings.Join(r.args, " "), indent(kube.String()), indent(lapis.String())))
		}
	}
	d.report(t, fmt.Sprintf("%d kubectl runs", len(runs)))
}

// indent indents the lines after the first of a multi-line answer.
func indent(s string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n      ")
}

// testRefusals compares the refusals that are more than the authorizer's no: server-side apply
// that would create, RBAC's escalation checks, impersonation, anonymous and bad credentials.
func testRefusals(t *testing.T, e *authzEnv) {
	as := func(id identity) caller { return caller{impersonate: id.headers()} }
	dana, editor, teamadmin, ghost := as(authzIdentities[5]), as(authzIdentities[2]), as(authzIdentities[3]), as(authzIdentities[7])
	robotAs := func(h ...string) caller {
		c := caller{cred: robotToken, impersonate: http.Header{}}
		for i := 0; i < len(h); i += 2 {
			c.impersonate.Add(h[i], h[i+1])
		}
		return c
	}
	const (
		rbacBase = "/apis/rbac.authorization.k8s.io/v1/namespaces/team/"
		cms      = "/api/v1/namespaces/team/configmaps"
	)
	applyCM := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {a: \"1\"}\n"
	}
	binding := func(name, role string) string {
		return `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"` + name + `"},` +
			`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"` + role + `"},` +
			`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"friend"}]}`
	}
	role := func(name, rules string) string {
		return `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"` + name + `"},"rules":` + rules + `}`
	}
	cases := []struct {
		name string
		who  caller
		r    request
		want int // kube's answer
	}{
		{"apply that creates needs create", dana, request{method: "PATCH", path: cms + "/new-cm?fieldManager=authz", contentType: applyType, body: applyCM("new-cm")}, 403},
		{"apply dry run that creates needs create", dana, request{method: "PATCH", path: cms + "/new-cm-dry?fieldManager=authz&dryRun=All", contentType: applyType, body: applyCM("new-cm-dry")}, 403},
		{"apply that updates needs patch only", dana, request{method: "PATCH", path: cms + "/cm1?fieldManager=authz&dryRun=All", contentType: applyType, body: applyCM("cm1")}, 200},
		{"edit may not create rolebindings", editor, request{method: "POST", path: rbacBase + "rolebindings?dryRun=All", contentType: jsonType, body: binding("grant-edit", "admin")}, 403},
		{"admin binding cluster-admin escalates", teamadmin, request{method: "POST", path: rbacBase + "rolebindings?dryRun=All", contentType: jsonType, body: binding("grant-cluster-admin", "cluster-admin")}, 403},
		{"admin binding admin", teamadmin, request{method: "POST", path: rbacBase + "rolebindings?dryRun=All", contentType: jsonType, body: binding("grant-admin", "admin")}, 201},
		// kube's escalation check looks the role up first: a 404 naming the role as a rolebinding.
		{"admin binding a missing role", teamadmin, request{method: "POST", path: rbacBase + "rolebindings?dryRun=All", contentType: jsonType, body: binding("grant-missing", "no-such-role")}, 404},
		{"admin creating a role beyond its rules escalates", teamadmin, request{method: "POST", path: rbacBase + "roles?dryRun=All", contentType: jsonType,
			body: role("beyond", `[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]},{"apiGroups":["apiextensions.k8s.io"],"resources":["customresourcedefinitions"],"verbs":["create","delete"]},{"apiGroups":[""],"resources":["nodes"],"verbs":["*"]}]`)}, 403},
		{"admin creating a role within its rules", teamadmin, request{method: "POST", path: rbacBase + "roles?dryRun=All", contentType: jsonType,
			body: role("within", `[{"apiGroups":[""],"resources":["configmaps","secrets"],"verbs":["get","list"]}]`)}, 201},
		{"admin updating a role beyond its rules escalates", teamadmin, request{method: "PUT", path: rbacBase + "roles/devs?dryRun=All", contentType: jsonType,
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"devs","namespace":"team"},"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]}]}`}, 403},
		{"dangling binding's reason", ghost, request{method: "GET", path: cms}, 403},
		{"impersonating a group without a user", caller{impersonate: http.Header{"Impersonate-Group": {"devs"}}}, request{method: "GET", path: cms}, 400},
		{"serviceaccount token", robotAs(), request{method: "GET", path: cms}, 403},
		{"serviceaccount token impersonating the user it may", robotAs("Impersonate-User", "viewer"), request{method: "GET", path: cms}, 200},
		{"serviceaccount token impersonating, refused as that user", robotAs("Impersonate-User", "viewer"), request{method: "GET", path: "/api/v1/namespaces/team/secrets"}, 403},
		{"serviceaccount token impersonating another user", robotAs("Impersonate-User", "editor"), request{method: "GET", path: cms}, 403},
		{"serviceaccount token impersonating a group", robotAs("Impersonate-User", "viewer", "Impersonate-Group", "devs"), request{method: "GET", path: cms}, 403},
		{"bad token", caller{cred: badToken}, request{method: "GET", path: cms}, 401},
		{"anonymous healthz", caller{cred: noCredential}, request{method: "GET", path: "/healthz"}, 200},
		{"anonymous version", caller{cred: noCredential}, request{method: "GET", path: "/version"}, 200},
		{"anonymous discovery", caller{cred: noCredential}, request{method: "GET", path: "/api"}, 403},
		{"anonymous list", caller{cred: noCredential}, request{method: "GET", path: cms}, 403},
		{"anonymous impersonating", caller{cred: noCredential, impersonate: http.Header{"Impersonate-User": {"someone"}}}, request{method: "GET", path: cms}, 403},
		{"anonymous impersonating on a path", caller{cred: noCredential, impersonate: http.Header{"Impersonate-User": {"someone"}}}, request{method: "GET", path: "/api"}, 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := e.send(c.r, c.who, true)
			if x.kube.code != c.want {
				t.Errorf("fixture: kube answered %s with %s; the case expects %d", c.r, describe(x.kube), c.want)
			}
			if kubeOnly {
				t.Logf("kube: %s", describe(x.kube))
				return
			}
			compare(t, c.r, x, allowance{})
		})
	}
}

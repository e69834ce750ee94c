package handlers_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/warning"
	authenticationapi "k8s.io/kubernetes/pkg/apis/authentication"
	"sigs.k8s.io/yaml"

	"github.com/lapis-dev/lapis/internal/handlers"
	"github.com/lapis-dev/lapis/internal/handlers/special"
)

// fakeIssuer records what the handler gives it and answers with a fixed token.
type fakeIssuer struct {
	mu    sync.Mutex
	sa    *corev1.ServiceAccount
	req   *authenticationapi.TokenRequest
	bound runtime.Object
	calls int
	err   error
}

// apiAudience is the API server's audience, which requests that name none get.
const apiAudience = "https://kubernetes.default.svc.cluster.local"

func (f *fakeIssuer) IssueToken(ctx context.Context, sa *corev1.ServiceAccount, req *authenticationapi.TokenRequest, bound runtime.Object) (*authenticationapi.TokenRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sa, f.req, f.bound, f.calls = sa, req.DeepCopy(), bound, f.calls+1
	if f.err != nil {
		return nil, f.err
	}
	warning.AddWarning(ctx, "", "issued by a fake")
	out := req.DeepCopy()
	out.Status = authenticationapi.TokenRequestStatus{Token: "fake-token", ExpirationTimestamp: metav1.NewTime(time.Unix(2000000000, 0))}
	return out, nil
}

func (f *fakeIssuer) last() (*corev1.ServiceAccount, *authenticationapi.TokenRequest, runtime.Object, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sa, f.req, f.bound, f.calls
}

// newTokenFixture is newFixture with a token issuer, and the ServiceAccount sa1, the Pod p1 (of
// sa1, on node n1), the Pod p2 (of another ServiceAccount), the Secret s1 and the Node n1.
func newTokenFixture(t *testing.T, issuer special.TokenIssuer) (*fixture, map[string]string) {
	t.Helper()
	svc := newService(t)
	f := serve(t, handlers.New(svc).WithEndpoints(special.New(svc, special.Auth{Audiences: authenticator.Audiences{apiAudience}}, issuer)))
	uids := map[string]string{}
	for _, o := range []struct{ path, name, body string }{
		{"/api/v1/namespaces", "default", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`},
		{"/api/v1/namespaces/default/serviceaccounts", "sa1", `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa1"}}`},
		{"/api/v1/namespaces/default/pods", "p1", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1"},"spec":{"serviceAccountName":"sa1","nodeName":"n1","containers":[{"name":"c","image":"i"}]}}`},
		{"/api/v1/namespaces/default/pods", "p2", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p2"},"spec":{"serviceAccountName":"other","containers":[{"name":"c","image":"i"}]}}`},
		{"/api/v1/namespaces/default/secrets", "s1", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1"}}`},
		{"/api/v1/nodes", "n1", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`},
	} {
		uids[o.name] = nested(f.must(201, call{method: "POST", path: o.path, body: o.body}), "metadata.uid")
	}
	return f, uids
}

const tokenPath = "/api/v1/namespaces/default/serviceaccounts/sa1/token"

func tokenRequest(spec string) string {
	return `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":` + spec + `}`
}

// TestTokenRequest: serviceaccounts/token checks the request as kube's TokenREST does, looks up
// what the token is bound to and answers 201 with what the issuer signed.
func TestTokenRequest(t *testing.T) {
	issuer := &fakeIssuer{}
	f, uids := newTokenFixture(t, issuer)
	tests := []struct {
		name  string
		path  string
		body  string
		want  want
		bound string // the kind and name of what the issuer got, "" for nothing
		calls int    // issuer calls the request makes
	}{
		{name: "no binding", body: tokenRequest(`{}`), want: want{code: 201}, calls: 1},
		{name: "bound to a pod", body: tokenRequest(`{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p1"}}`), want: want{code: 201}, bound: "Pod p1", calls: 1},
		// kube ignores the reference's version.
		{name: "bound to a pod, no apiVersion", body: tokenRequest(`{"boundObjectRef":{"kind":"Pod","name":"p1"}}`), want: want{code: 201}, bound: "Pod p1", calls: 1},
		{name: "bound to a secret", body: tokenRequest(`{"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"s1"}}`), want: want{code: 201}, bound: "Secret s1", calls: 1},
		{name: "bound to a node", body: tokenRequest(`{"boundObjectRef":{"kind":"Node","apiVersion":"v1","name":"n1"}}`), want: want{code: 201}, bound: "Node n1", calls: 1},
		{name: "other kinds are the issuer's to refuse", body: tokenRequest(`{"boundObjectRef":{"kind":"ConfigMap","apiVersion":"v1","name":"c"}}`), want: want{code: 201}, calls: 1},
		{name: "missing pod", body: tokenRequest(`{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"nope"}}`),
			want: want{code: 404, reason: metav1.StatusReasonNotFound, message: `pods "nope" not found`}},
		{name: "missing node", body: tokenRequest(`{"boundObjectRef":{"kind":"Node","apiVersion":"v1","name":"nope"}}`),
			want: want{code: 404, reason: metav1.StatusReasonNotFound, message: `nodes "nope" not found`}},
		{name: "missing secret", body: tokenRequest(`{"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"nope"}}`),
			want: want{code: 404, reason: metav1.StatusReasonNotFound, message: `secrets "nope" not found`}},
		{name: "missing service account", path: "/api/v1/namespaces/default/serviceaccounts/nope/token", body: tokenRequest(`{}`),
			want: want{code: 404, reason: metav1.StatusReasonNotFound, message: `serviceaccounts "nope" not found`}},
		{name: "other name", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","metadata":{"name":"x"},"spec":{}}`,
			want: want{code: 422, reason: metav1.StatusReasonInvalid, contains: "must match the service account name if specified"}},
		{name: "too short", body: tokenRequest(`{"expirationSeconds":5}`),
			want: want{code: 422, reason: metav1.StatusReasonInvalid, contains: "may not specify a duration less than 10 minutes"}},
		{name: "other namespace", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","metadata":{"namespace":"x"},"spec":{}}`,
			want: want{code: 400, reason: metav1.StatusReasonBadRequest}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, _, before := issuer.last()
			path := tt.path
			if path == "" {
				path = tokenPath
			}
			r := f.do(call{method: "POST", path: path, body: tt.body, headers: []string{"User-Agent: tester/1.0"}})
			tt.want.check(t, r)
			sa, req, bound, calls := issuer.last()
			if calls-before != tt.calls {
				t.Fatalf("issuer called %d times, want %d", calls-before, tt.calls)
			}
			if tt.calls == 0 {
				return
			}
			if sa.Name != "sa1" || string(sa.UID) != uids["sa1"] {
				t.Errorf("issuer got ServiceAccount %s/%s", sa.Name, sa.UID)
			}
			if req.Name != "sa1" || req.Namespace != "default" || string(req.UID) != uids["sa1"] {
				t.Errorf("issuer got request %s/%s %s", req.Namespace, req.Name, req.UID)
			}
			if len(req.Spec.Audiences) != 1 || req.Spec.Audiences[0] != apiAudience || req.Spec.ExpirationSeconds != 3600 {
				t.Errorf("issuer got spec %+v, want the API audiences and kube's default expiration", req.Spec)
			}
			got := ""
			if m, ok := bound.(metav1.Object); ok {
				got = kindOf(bound) + " " + m.GetName()
				if string(m.GetUID()) != uids[m.GetName()] {
					t.Errorf("bound object uid %s, want %s", m.GetUID(), uids[m.GetName()])
				}
			}
			if got != tt.bound {
				t.Errorf("issuer got bound object %q, want %q", got, tt.bound)
			}
			if p, ok := bound.(*corev1.Pod); ok && p.Spec.ServiceAccountName != "sa1" {
				t.Errorf("bound pod lost its spec: %+v", p.Spec)
			}
			obj := r.object(t)
			if obj["kind"] != "TokenRequest" || obj["apiVersion"] != "authentication.k8s.io/v1" || nested(obj, "status.token") != "fake-token" ||
				nested(obj, "metadata.name") != "sa1" || nested(obj, "metadata.uid") != uids["sa1"] {
				t.Errorf("answer: %s", r.body)
			}
			if w := r.header.Get("Warning"); !strings.Contains(w, "issued by a fake") {
				t.Errorf("Warning header %q", w)
			}
			// kube's create handler records the fields as sent, for the token subresource.
			mf, _ := obj["metadata"].(map[string]any)["managedFields"].([]any)
			if len(mf) != 1 {
				t.Fatalf("managedFields: %v", mf)
			}
			entry := mf[0].(map[string]any)
			if entry["manager"] != "tester" || entry["subresource"] != "token" || entry["operation"] != "Update" || entry["apiVersion"] != "authentication.k8s.io/v1" {
				t.Errorf("managedFields entry %v", entry)
			}
		})
	}
}

func kindOf(obj runtime.Object) string {
	switch obj.(type) {
	case *corev1.Pod:
		return "Pod"
	case *corev1.Secret:
		return "Secret"
	case *corev1.Node:
		return "Node"
	}
	return "?"
}

// TestTokenRequestRepresentations: the answer in YAML and Protobuf (client-go's CreateToken),
// dry-run issuing a token too, as kube's does.
func TestTokenRequestRepresentations(t *testing.T) {
	f, _ := newTokenFixture(t, &fakeIssuer{})
	r := f.do(call{method: "POST", path: tokenPath + "?dryRun=All", body: tokenRequest(`{"audiences":["x"]}`), headers: []string{"Accept: application/yaml"}})
	if r.code != 201 || r.header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("yaml: %d %s: %s", r.code, r.header.Get("Content-Type"), r.body)
	}
	var tr authenticationv1.TokenRequest
	if err := yaml.Unmarshal(r.body, &tr); err != nil || tr.Status.Token != "fake-token" || tr.Spec.Audiences[0] != "x" {
		t.Errorf("yaml answer %v: %s", err, r.body)
	}
	out, err := f.protobufClient().CoreV1().ServiceAccounts("default").CreateToken(context.Background(), "sa1",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "p1"}}}, metav1.CreateOptions{})
	if err != nil || out.Status.Token != "fake-token" || out.Name != "sa1" || out.Spec.BoundObjectRef.Name != "p1" || !out.Status.ExpirationTimestamp.Equal(&metav1.Time{Time: time.Unix(2000000000, 0)}) {
		t.Errorf("protobuf: %v %+v", err, out)
	}
}

// TestTokenRequestErrors: the issuer's errors are the answer; without an issuer lapis refuses
// with a 400 after kube's checks; only create is served.
func TestTokenRequestErrors(t *testing.T) {
	issuer := &fakeIssuer{err: apierrors.NewBadRequest("cannot bind token for serviceaccount \"sa1\" to pod running with different serviceaccount name.")}
	f, _ := newTokenFixture(t, issuer)
	want{code: 400, reason: metav1.StatusReasonBadRequest, message: issuer.err.Error()}.check(t,
		f.do(call{method: "POST", path: tokenPath, body: tokenRequest(`{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p2"}}`)}))
	want{code: 405, reason: metav1.StatusReasonMethodNotAllowed}.check(t, f.do(call{method: "GET", path: tokenPath}))

	plain := newFixture(t)
	plain.must(201, call{method: "POST", path: "/api/v1/namespaces/default/serviceaccounts", body: `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa1"}}`})
	want{code: 422, reason: metav1.StatusReasonInvalid}.check(t, plain.do(call{method: "POST", path: tokenPath, body: tokenRequest(`{"expirationSeconds":1}`)}))
	want{code: 400, reason: metav1.StatusReasonBadRequest, contains: "lapis has no service account token issuer"}.check(t,
		plain.do(call{method: "POST", path: tokenPath, body: tokenRequest(`{}`)}))
}

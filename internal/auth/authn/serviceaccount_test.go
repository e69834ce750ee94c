package authn

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/warning"
	k8stesting "k8s.io/client-go/testing"
	authenticationapi "k8s.io/kubernetes/pkg/apis/authentication"
	"k8s.io/kubernetes/pkg/serviceaccount"
)

// issue asks a for a token of the cluster's ServiceAccount, bound to bound (nil, or one of the
// cluster's objects).
func issue(t *testing.T, a *Authenticator, c *cluster, bound runtime.Object, audiences ...string) string {
	t.Helper()
	out, err := a.IssueToken(context.Background(), c.sa, tokenRequestFor(bound, 3600, audiences...), bound)
	if err != nil {
		t.Fatal(err)
	}
	return out.Status.Token
}

func tokenRequestFor(bound runtime.Object, seconds int64, audiences ...string) *authenticationapi.TokenRequest {
	req := &authenticationapi.TokenRequest{Spec: authenticationapi.TokenRequestSpec{ExpirationSeconds: seconds, Audiences: audiences}}
	if m, ok := bound.(metav1.Object); ok {
		kind := map[string]string{"*v1.Pod": "Pod", "*v1.Secret": "Secret", "*v1.Node": "Node"}[typeName(bound)]
		req.Spec.BoundObjectRef = &authenticationapi.BoundObjectReference{Kind: kind, APIVersion: "v1", Name: m.GetName(), UID: m.GetUID()}
	}
	return req
}

func typeName(obj runtime.Object) string {
	switch obj.(type) {
	case *corev1.Pod:
		return "*v1.Pod"
	case *corev1.Secret:
		return "*v1.Secret"
	case *corev1.Node:
		return "*v1.Node"
	}
	return ""
}

// TestServiceAccountTokens: bound tokens authenticate as their ServiceAccount for as long as
// what they are bound to exists, as kube's validator decides.
func TestServiceAccountTokens(t *testing.T) {
	saUser := func(extra map[string][]string) outcome {
		return outcome{user: "system:serviceaccount:ns1:sa1", uid: "sa-uid",
			groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"}, extra: extra}
	}
	deleteObj := func(resource, namespace, name string) func(*cluster) {
		return func(c *cluster) {
			if err := c.client.Tracker().Delete(corev1.SchemeGroupVersion.WithResource(resource), namespace, name); err != nil {
				panic(err)
			}
		}
	}
	tests := []struct {
		name      string
		bound     func(*cluster) runtime.Object
		audiences []string
		change    func(*cluster) // after the token is issued
		ctxAuds   []string       // audiences the authentication asks for
		want      outcome
	}{
		{name: "unbound", want: saUser(nil)},
		{name: "bound to a pod", bound: func(c *cluster) runtime.Object { return c.pod },
			want: saUser(map[string][]string{
				"authentication.kubernetes.io/pod-name": {"p1"}, "authentication.kubernetes.io/pod-uid": {"pod-uid"},
				"authentication.kubernetes.io/node-name": {"n1"}, "authentication.kubernetes.io/node-uid": {"node-uid"}})},
		{name: "bound to a secret", bound: func(c *cluster) runtime.Object { return c.secret }, want: saUser(nil)},
		{name: "bound to a node", bound: func(c *cluster) runtime.Object { return c.node },
			want: saUser(map[string][]string{"authentication.kubernetes.io/node-name": {"n1"}, "authentication.kubernetes.io/node-uid": {"node-uid"}})},
		{name: "service account deleted", change: deleteObj("serviceaccounts", "ns1", "sa1"), want: outcome{err: `serviceaccounts "sa1" not found`}},
		{name: "service account recreated", change: func(c *cluster) {
			sa := c.sa.DeepCopy()
			sa.UID = "other"
			deleteObj("serviceaccounts", "ns1", "sa1")(c)
			_ = c.client.Tracker().Add(sa)
		}, want: outcome{err: "service account UID (other) does not match claim (sa-uid)"}},
		{name: "bound pod deleted", bound: func(c *cluster) runtime.Object { return c.pod }, change: deleteObj("pods", "ns1", "p1"),
			want: outcome{err: "service account token has been invalidated"}},
		{name: "bound pod recreated", bound: func(c *cluster) runtime.Object { return c.pod }, change: func(c *cluster) {
			pod := c.pod.DeepCopy()
			pod.UID = "pod-2"
			_ = c.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), pod, "ns1")
		}, want: outcome{err: "pod UID (pod-2) does not match service account pod ref claim (pod-uid)"}},
		{name: "bound pod being deleted long ago", bound: func(c *cluster) runtime.Object { return c.pod }, change: func(c *cluster) {
			pod := c.pod.DeepCopy()
			pod.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(-time.Hour)}
			_ = c.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), pod, "ns1")
		}, want: outcome{err: "service account token has been invalidated"}},
		{name: "bound secret deleted", bound: func(c *cluster) runtime.Object { return c.secret }, change: deleteObj("secrets", "ns1", "s1"),
			want: outcome{err: "service account token has been invalidated"}},
		{name: "bound node deleted", bound: func(c *cluster) runtime.Object { return c.node }, change: func(c *cluster) {
			_ = c.client.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("nodes"), "", "n1")
		}, want: outcome{err: "service account token has been invalidated"}},
		// Deleting the pod's node does not matter to a pod-bound token.
		{name: "pod's node deleted", bound: func(c *cluster) runtime.Object { return c.pod }, change: func(c *cluster) {
			_ = c.client.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("nodes"), "", "n1")
		}, want: saUser(map[string][]string{"authentication.kubernetes.io/pod-name": {"p1"}})},
		{name: "other audience on the API", audiences: []string{"vault"}, want: outcome{err: "token audiences [\"vault\"] is invalid for the target audiences"}},
		{name: "other audience asked for", audiences: []string{"vault"}, ctxAuds: []string{"vault"}, want: saUser(nil)},
		{name: "API token for another audience", ctxAuds: []string{"vault"}, want: outcome{err: "is invalid for the target audiences [\"vault\"]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster()
			a, err := build(Config{ServiceAccounts: ServiceAccountConfig{DataDir: t.TempDir()}}, 0)
			if err != nil {
				t.Fatal(err)
			}
			var bound runtime.Object
			if tt.bound != nil {
				bound = tt.bound(c)
			}
			c.use(a)
			token := issue(t, a, c, bound, tt.audiences...)
			if tt.change != nil {
				tt.change(c)
			}
			ctx := context.Background()
			if tt.ctxAuds != nil {
				ctx = authenticator.WithAudiences(ctx, tt.ctxAuds)
			}
			resp, ok, err := a.AuthenticateToken(ctx, token)
			if got := outcomeOf(resp, ok, err); !got.matches(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if tt.want.err == "" {
				// On the request path too; the token is not passed on.
				req := request(bearer(token))
				if tt.ctxAuds != nil {
					req = req.WithContext(ctx)
				}
				if resp, ok, err := a.AuthenticateRequest(req); !ok || !outcomeOf(resp, ok, err).matches(tt.want) || req.Header.Get("Authorization") != "" {
					t.Errorf("request: %+v %v", outcomeOf(resp, ok, err), ok)
				}
			}
		})
	}
}

// TestServiceAccountTokensBeforeLookups: until the server can look objects up, ServiceAccount
// tokens are refused (401), whatever they are.
func TestServiceAccountTokensBeforeLookups(t *testing.T) {
	c := newCluster()
	a, err := build(Config{Anonymous: true, ServiceAccounts: ServiceAccountConfig{DataDir: t.TempDir()}}, tokenSuccessCacheTTL)
	if err != nil {
		t.Fatal(err)
	}
	token := issue(t, a, c, c.pod)
	if resp, ok, err := a.AuthenticateRequest(request(bearer(token))); ok || err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Errorf("before the getter: %+v %v %v", resp, ok, err)
	}
	c.use(a)
	if _, ok, err := a.AuthenticateRequest(request(bearer(token))); !ok {
		t.Errorf("after the getter: %v", err)
	}
}

// TestLegacyTokens: tokens of kubernetes.io/service-account-token Secrets authenticate while
// the Secret holds them, and mark the Secret with the day they were last used.
func TestLegacyTokens(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *cluster, secret *corev1.Secret)
		want   outcome
		patch  bool // the Secret gets kube's last-used label
	}{
		{name: "valid", want: outcome{user: "system:serviceaccount:ns1:sa1", uid: "sa-uid", groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"}}, patch: true},
		{name: "secret deleted", change: func(c *cluster, s *corev1.Secret) {
			_ = c.client.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("secrets"), "ns1", s.Name)
		}, want: outcome{err: "Token has been invalidated"}},
		{name: "secret holds another token", change: func(c *cluster, s *corev1.Secret) {
			s = s.DeepCopy()
			s.Data[corev1.ServiceAccountTokenKey] = []byte("other")
			_ = c.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("secrets"), s, "ns1")
		}, want: outcome{err: "Token does not match server's copy"}},
		{name: "service account deleted", change: func(c *cluster, _ *corev1.Secret) {
			_ = c.client.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("serviceaccounts"), "ns1", "sa1")
		}, want: outcome{err: `serviceaccounts "sa1" not found`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := build(Config{ServiceAccounts: ServiceAccountConfig{DataDir: t.TempDir()}}, 0)
			if err != nil {
				t.Fatal(err)
			}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sa1-token", Namespace: "ns1", UID: "legacy-uid",
				Annotations: map[string]string{corev1.ServiceAccountNameKey: "sa1", corev1.ServiceAccountUIDKey: "sa-uid"}},
				Type: corev1.SecretTypeServiceAccountToken}
			c := newCluster()
			public, private := serviceaccount.LegacyClaims(*c.sa, *secret)
			token, err := a.LegacyTokenGenerator().GenerateToken(context.Background(), public, private)
			if err != nil {
				t.Fatal(err)
			}
			if iss := claims(t, token)["iss"]; iss != serviceaccount.LegacyIssuer {
				t.Errorf("legacy issuer %v", iss)
			}
			secret.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(token)}
			_ = c.client.Tracker().Add(secret)
			c.use(a)
			if tt.change != nil {
				tt.change(c, secret)
			}
			c.client.ClearActions()
			resp, ok, err := a.AuthenticateRequest(request(bearer(token)))
			if got := outcomeOf(resp, ok, err); !got.matches(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			patched := false
			for _, action := range c.client.Actions() {
				if p, ok := action.(k8stesting.PatchAction); ok && p.GetResource().Resource == "secrets" && p.GetName() == "sa1-token" {
					patched = strings.Contains(string(p.GetPatch()), serviceaccount.LastUsedLabelKey)
				}
			}
			if patched != tt.patch {
				t.Errorf("last-used label patched: %v, want %v (%v)", patched, tt.patch, c.client.Actions())
			}
		})
	}
}

// TestIssueToken: kube's TokenREST after its lookups: defaults, bound object checks and their
// messages, expiration caps and extension, claims.
// issueTokenCase is a TokenRequest and what IssueToken must answer to it.
type issueTokenCase struct {
	name       string
	sa         ServiceAccountConfig
	req        func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object)
	err        string // the exact message of the API error
	code       int32
	lifetime   int64  // exp - iat of the token
	expiration int64  // expirationSeconds of the answer
	warnAfter  int64  // warnafter - iat, 0 for none
	warning    string // a warning recorded
	node       map[string]any
}

// issueTokenCases are TokenRequests for pods, secrets and other objects, with kube's answers.
func issueTokenCases() []issueTokenCase {
	const year = serviceaccount.ExpirationExtensionSeconds
	otherPod := func(c *cluster) runtime.Object {
		p := c.pod.DeepCopy()
		p.Spec.ServiceAccountName = "other"
		return p
	}
	return []issueTokenCase{
		{name: "defaults", req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			return tokenRequestFor(nil, 3600), nil
		}, lifetime: 3600, expiration: 3600},
		{name: "pod with its node", req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			return tokenRequestFor(c.pod, 3600), c.pod
		}, lifetime: 3600, expiration: 3600, node: map[string]any{"name": "n1", "uid": "node-uid"}},
		{name: "pod on a node that does not exist", req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			p := c.pod.DeepCopy()
			p.Spec.NodeName = "gone"
			return tokenRequestFor(p, 3600), p
		}, lifetime: 3600, expiration: 3600, node: map[string]any{"name": "gone"}},
		{name: "pod of another service account", req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			p := otherPod(c)
			return tokenRequestFor(p, 3600), p
		}, code: 400, err: `cannot bind token for serviceaccount "sa1" to pod running with different serviceaccount name.`},
		{name: "pod uid changed", req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			req := tokenRequestFor(c.pod, 3600)
			req.Spec.BoundObjectRef.UID = "old"
			return req, c.pod
		}, code: 409, err: `Operation cannot be fulfilled on Pod "p1": the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated`},
		{name: "secret uid changed", req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			req := tokenRequestFor(c.secret, 3600)
			req.Spec.BoundObjectRef.UID = types.UID("old")
			return req, c.secret
		}, code: 409, err: `Operation cannot be fulfilled on Secret "s1": the UID in the bound object reference (old) does not match the UID in record. The object might have been deleted and then recreated`},
		{name: "configmap", req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			req := tokenRequestFor(nil, 3600)
			req.Spec.BoundObjectRef = &authenticationapi.BoundObjectReference{Kind: "ConfigMap", APIVersion: "v1", Name: "c"}
			return req, nil
		}, code: 400, err: "cannot bind token to object of type /v1, Kind=ConfigMap"},
		{name: "pod of another group", req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			req := tokenRequestFor(nil, 3600)
			req.Spec.BoundObjectRef = &authenticationapi.BoundObjectReference{Kind: "Pod", APIVersion: "apps/v1", Name: "p1"}
			return req, nil
		}, code: 400, err: "cannot bind token to object of type apps/v1, Kind=Pod"},
		{name: "webhook configuration", req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			req := tokenRequestFor(nil, 3600)
			req.Spec.BoundObjectRef = &authenticationapi.BoundObjectReference{Kind: "ValidatingWebhookConfiguration", APIVersion: "admissionregistration.k8s.io/v1", Name: "w"}
			return req, nil
		}, code: 400, err: "cannot bind token to object of type admissionregistration.k8s.io/v1, Kind=ValidatingWebhookConfiguration (feature gate APIServerWebhookAuthenticationToken is disabled)"},
		{name: "pod not given", req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			return tokenRequestFor(c.pod, 3600), nil
		}, code: 500},
		{name: "capped", sa: ServiceAccountConfig{MaxTokenExpiration: 2 * time.Hour}, req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			return tokenRequestFor(nil, 3*3600), nil
		}, lifetime: 7200, expiration: 7200, warning: "requested expiration of 10800 seconds shortened to 7200 seconds"},
		{name: "kubelet's pod token extended", sa: ServiceAccountConfig{ExtendExpiration: true}, req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			return tokenRequestFor(c.pod, 3607), c.pod
		}, lifetime: year, expiration: 3607, warnAfter: 3607, node: map[string]any{"name": "n1", "uid": "node-uid"}},
		{name: "extended only when asked", req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			return tokenRequestFor(c.pod, 3607), c.pod
		}, lifetime: 3607, expiration: 3607, node: map[string]any{"name": "n1", "uid": "node-uid"}},
		{name: "extended only for pods", sa: ServiceAccountConfig{ExtendExpiration: true}, req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			return tokenRequestFor(c.secret, 3607), c.secret
		}, lifetime: 3607, expiration: 3607},
		{name: "extended only for the API audiences", sa: ServiceAccountConfig{ExtendExpiration: true}, req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			return tokenRequestFor(c.pod, 3607, "vault"), c.pod
		}, lifetime: 3607, expiration: 3607, node: map[string]any{"name": "n1", "uid": "node-uid"}},
		// The cap applies first, as in kube: a capped request is not kubelet's.
		{name: "capped below the extension", sa: ServiceAccountConfig{ExtendExpiration: true, MaxTokenExpiration: time.Hour}, req: func(c *cluster) (*authenticationapi.TokenRequest, runtime.Object) {
			return tokenRequestFor(c.pod, 3607), c.pod
		}, lifetime: 3600, expiration: 3600, warning: "requested expiration of 3607 seconds shortened to 3600 seconds", node: map[string]any{"name": "n1", "uid": "node-uid"}},
	}
}

func TestIssueToken(t *testing.T) {
	for _, tt := range issueTokenCases() {
		t.Run(tt.name, tt.check)
	}
}

// check issues tt's token and checks the answer, its claims and its header.
func (tt issueTokenCase) check(t *testing.T) {
	c := newCluster()
	sa := tt.sa
	sa.DataDir = t.TempDir()
	a, err := build(Config{ServiceAccounts: sa}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.use(a)
	req, bound := tt.req(c)
	recorder := &warnings{}
	before := time.Now().Truncate(time.Second)
	out, err := a.IssueToken(warning.WithWarningRecorder(context.Background(), recorder), c.sa, req, bound)
	if tt.code != 0 {
		status, ok := err.(apierrors.APIStatus)
		if !ok || status.Status().Code != tt.code || (tt.err != "" && status.Status().Message != tt.err) {
			t.Fatalf("error %v, want %d %q", err, tt.code, tt.err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if out.Name != "sa1" || out.Namespace != "ns1" || out.UID != "sa-uid" || out.CreationTimestamp.Time.Before(before) {
		t.Errorf("metadata %+v", out.ObjectMeta)
	}
	if out.Spec.ExpirationSeconds != tt.expiration {
		t.Errorf("expirationSeconds %d, want %d", out.Spec.ExpirationSeconds, tt.expiration)
	}
	if got := out.Status.ExpirationTimestamp.Sub(out.CreationTimestamp.Time); got != time.Duration(tt.expiration)*time.Second {
		t.Errorf("expirationTimestamp %s after creation, want %ds", got, tt.expiration)
	}
	if len(req.Spec.Audiences) == 0 && (len(out.Spec.Audiences) != 1 || out.Spec.Audiences[0] != DefaultIssuer) {
		t.Errorf("audiences %v, want the API audiences", out.Spec.Audiences)
	}
	if tt.warning != "" && (len(recorder.texts) != 1 || recorder.texts[0] != tt.warning) {
		t.Errorf("warnings %q, want %q", recorder.texts, tt.warning)
	}
	cl := claims(t, out.Status.Token)
	iat := int64(cl["iat"].(float64))
	if cl["iss"] != DefaultIssuer || cl["sub"] != "system:serviceaccount:ns1:sa1" || int64(cl["exp"].(float64))-iat != tt.lifetime || cl["jti"] == nil {
		t.Errorf("claims %v", cl)
	}
	if aud := cl["aud"].([]any); len(aud) != len(out.Spec.Audiences) || aud[0] != out.Spec.Audiences[0] {
		t.Errorf("aud %v, want %v", aud, out.Spec.Audiences)
	}
	k8s := cl["kubernetes.io"].(map[string]any)
	if w, _ := k8s["warnafter"].(float64); int64(w) != 0 && int64(w)-iat != tt.warnAfter || (w == 0) != (tt.warnAfter == 0) {
		t.Errorf("warnafter %v, want iat+%d", k8s["warnafter"], tt.warnAfter)
	}
	if node, _ := k8s["node"].(map[string]any); len(node) != len(tt.node) || node["name"] != tt.node["name"] || node["uid"] != tt.node["uid"] {
		t.Errorf("node claim %v, want %v", k8s["node"], tt.node)
	}
	if h := header(t, out.Status.Token); h["alg"] != "ES256" || h["kid"] == "" {
		t.Errorf("header %v", h)
	}
}

// warnings records warnings, as kube's recorder.
type warnings struct{ texts []string }

func (w *warnings) AddWarning(_, text string) { w.texts = append(w.texts, text) }

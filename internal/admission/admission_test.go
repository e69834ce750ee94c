package admission

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/openapi"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install" // their defaults in legacyscheme
	api "k8s.io/kubernetes/pkg/apis/core"
	generatedopenapi "k8s.io/kubernetes/pkg/generated/openapi"
	"k8s.io/utils/ptr"
)

// testOptions are the chain's options over a fake clientset: a fake dynamic client, a REST
// mapper knowing ConfigMaps, Services resolved through the fake's EndpointSlices.
func testOptions(t *testing.T, client *fake.Clientset, factory informers.SharedInformerFactory, stop <-chan struct{}) Options {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	services, err := NewServiceResolver(factory, "https://127.0.0.1:6443", stop)
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Client: fakeClient{client}, Factory: factory, Authorizer: authorizerfactory.NewAlwaysAllowAuthorizer(), Stop: stop,
		Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), RESTMapper: mapper, ServiceResolver: services,
	}
}

// defaulted are objects with kube's defaults (selectors, policies), as lapis would store them.
func defaulted(objs ...runtime.Object) []runtime.Object {
	for _, o := range objs {
		legacyscheme.Scheme.Default(o)
	}
	return objs
}

// fakeClient is the fake clientset with an OpenAPI v3 discovery serving core/v1's ConfigMap
// (the fake's panics): MutatingAdmissionPolicy's type converter reads it.
type fakeClient struct{ *fake.Clientset }

func (c fakeClient) Discovery() discovery.DiscoveryInterfaces {
	return fakeDiscovery{c.Clientset.Discovery().(*fakediscovery.FakeDiscovery)}
}

type fakeDiscovery struct{ *fakediscovery.FakeDiscovery }

func (fakeDiscovery) OpenAPIV3() openapi.Client { return configMapOpenAPI{} }

type configMapOpenAPI struct{}

func (configMapOpenAPI) Paths() (map[string]openapi.GroupVersion, error) {
	return map[string]openapi.GroupVersion{"api/v1": configMapOpenAPI{}}, nil
}

func (configMapOpenAPI) ServerRelativeURL() string { return "/openapi/v3/api/v1?hash=1" }

// Schema is a document with kube's ConfigMap schema, references resolved.
func (configMapOpenAPI) Schema(string) ([]byte, error) {
	s, err := resolver.NewDefinitionsSchemaResolver(generatedopenapi.GetOpenAPIDefinitions, clientgoscheme.Scheme).
		ResolveSchema(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"openapi": "3.0.0", "info": map[string]string{"title": "t", "version": "v1"},
		"paths": map[string]any{}, "components": map[string]any{"schemas": map[string]any{"io.k8s.api.core.v1.ConfigMap": s}}})
}

// TestPluginOrder: the chain is kube-apiserver 1.37's default plugins in kube's order
// (pkg/kubeapiserver/options: AllOrderedPlugins less DefaultOffAdmissionPlugins, less
// NamespaceLifecycle, the objects pipeline's own), the policies and webhooks after the
// built-in plugins and before ResourceQuota.
func TestPluginOrder(t *testing.T) {
	want := []string{"LimitRanger", "ServiceAccount", "TaintNodesByCondition", "PodSecurity", "Priority",
		"DefaultTolerationSeconds", "DefaultStorageClass", "StorageObjectInUseProtection", "PodGroupProtection",
		"PersistentVolumeClaimResize", "RuntimeClass", "CertificateApproval", "CertificateSigning",
		"ClusterTrustBundleAttest", "CertificateSubjectRestriction", "DefaultIngressClass", "PodTopologyLabels",
		"NodeDeclaredFeatureValidator", "PodResizeValidator",
		"MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook",
		"ResourceQuota"}
	var got []string
	for _, p := range defaultPlugins {
		got = append(got, p.name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("plugins:\n got %v\nwant %v", got, want)
	}
}

// TestServiceResolver: a Service reference resolves to a ready endpoint of the Service's
// EndpointSlices at the slice's port of the same name; kubernetes.default:443 to lapis.
func TestServiceResolver(t *testing.T) {
	svc := func(name string, typ corev1.ServiceType) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.ServiceSpec{
			Type: typ, Ports: []corev1.ServicePort{{Name: "https", Port: 443}, {Name: "other", Port: 8443}}}}
	}
	slice := func(name, service string, ready bool, addrs ...string) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To[int32](9443)}},
		}
		for _, a := range addrs {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
		}
		return s
	}
	client := fake.NewClientset(
		svc("hook", corev1.ServiceTypeClusterIP), slice("hook-1", "hook", true, "127.0.0.1"),
		svc("unready", corev1.ServiceTypeClusterIP), slice("unready-1", "unready", false, "127.0.0.2"),
		svc("external", corev1.ServiceTypeExternalName),
		svc("empty", corev1.ServiceTypeClusterIP))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := NewServiceResolver(informers.NewSharedInformerFactory(client, 0), "https://127.0.0.1:6443", ctx.Done())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		namespace, name string
		port            int32
		want            string // URL or error
	}{
		{"ns", "hook", 443, "https://127.0.0.1:9443"},
		{"ns", "hook", 8443, `no endpoints available for service "hook"`}, // no such port in the slice
		{"ns", "hook", 80, `no service port 80 found for service "hook"`},
		{"ns", "unready", 443, `no endpoints available for service "unready"`},
		{"ns", "empty", 443, `no endpoints available for service "empty"`},
		{"ns", "external", 443, `unsupported service type "ExternalName"`},
		{"ns", "missing", 443, `service "missing" not found`},
		{"default", "kubernetes", 443, "https://127.0.0.1:6443"},
	}
	for _, tc := range tests {
		u, err := r.ResolveEndpoint(tc.namespace, tc.name, tc.port)
		got := errString(err)
		if err == nil {
			got = u.String()
		}
		if got != tc.want {
			t.Errorf("%s/%s:%d: got %q, want %q", tc.namespace, tc.name, tc.port, got, tc.want)
		}
	}
}

// warnings records what plugins warn, as the request's warning recorder.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// hookServer is a webhook over TLS on 127.0.0.1, its certificate for names (httptest's,
// 127.0.0.1 and example.com, without): it records the reviews it gets and answers with answer.
func hookServer(t *testing.T, answer func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse, names ...string) (*httptest.Server, *[]admissionv1.AdmissionRequest) {
	t.Helper()
	var mu sync.Mutex
	var got []admissionv1.AdmissionRequest
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, *review.Request)
		mu.Unlock()
		resp := answer(review.Request)
		resp.UID = review.Request.UID
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(w).Encode(&review)
	}))
	if len(names) > 0 {
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{selfSigned(t, names...)}}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &got
}

// selfSigned is a self-signed serving certificate for names.
func selfSigned(t *testing.T, names ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}
}

func caBundle(srv *httptest.Server) []byte {
	cert := srv.Certificate()
	if srv.TLS != nil && len(srv.TLS.Certificates) > 0 && srv.TLS.Certificates[0].Leaf != nil {
		cert = srv.TLS.Certificates[0].Leaf
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

var configMapRule = []admissionregistrationv1.RuleWithOperations{{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
}}

// TestWebhooks: a mutating and a validating webhook configured by URL are called (by kube's
// plugins) with an AdmissionReview v1 carrying the request's user; the mutating webhook's
// patch is applied to the object, the validating webhook's denial is the chain's answer and
// its warnings reach the request; a service reference is called through the Service's
// EndpointSlice.
func TestWebhooks(t *testing.T) {
	mutator, mutated := hookServer(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt,
			Patch: []byte(`[{"op":"add","path":"/data/mutated","value":"yes"}]`)}
	})
	validator, validated := hookServer(t, func(r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var cm corev1.ConfigMap
		_ = json.Unmarshal(r.Object.Raw, &cm)
		if cm.Data["color"] == "red" {
			return &admissionv1.AdmissionResponse{Allowed: false, Warnings: []string{"red seen"},
				Result: &metav1.Status{Code: http.StatusForbidden, Message: "red is not allowed"}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"looked at " + cm.Name}}
	})
	// A third webhook, called through a Service whose EndpointSlice points at it.
	viaService, calledViaService := hookServer(t, func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}, "hook.ns.svc")
	servicePort := int32(viaService.Listener.Addr().(*net.TCPAddr).Port)
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	client := fake.NewClientset(defaulted(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "m"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: "m.lapis.dev", Rules: configMapRule, SideEffects: &none, FailurePolicy: &fail,
				AdmissionReviewVersions: []string{"v1"},
				ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(mutator.URL + "/mutate"), CABundle: caBundle(mutator)},
			}}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "v"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "v.lapis.dev", Rules: configMapRule, SideEffects: &none, FailurePolicy: &fail,
				AdmissionReviewVersions: []string{"v1"},
				ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(validator.URL + "/validate"), CABundle: caBundle(validator)},
			}, {
				Name: "s.lapis.dev", Rules: configMapRule, SideEffects: &none, FailurePolicy: &fail,
				AdmissionReviewVersions: []string{"v1"},
				ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: caBundle(viaService),
					Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "hook", Path: ptr.To("/validate")}},
			}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "ns"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}},
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "hook-1", Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: "hook"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: &servicePort}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}}},
		})...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	chain, err := New(testOptions(t, client, factory, ctx.Done()))
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"devs", user.AllAuthenticated}}
	for _, tc := range []struct {
		name         string
		color        string
		want         string
		wantWarnings []string
	}{
		{"admitted", "blue", "", []string{"looked at c-blue"}},
		{"denied", "red", `admission webhook "v.lapis.dev" denied the request: red is not allowed`, []string{"red seen"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &warnings{}
			rctx := warning.WithWarningRecorder(ctx, w)
			cm := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c-" + tc.color, Namespace: "ns"}, Data: map[string]string{"color": tc.color}}
			attrs := admission.NewAttributesRecord(cm, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "ns", cm.Name,
				corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, &metav1.CreateOptions{}, false, alice)
			o := admission.NewObjectInterfacesFromScheme(legacyscheme.Scheme)
			if err := chain.(admission.MutationInterface).Admit(rctx, attrs, o); err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if cm.Data["mutated"] != "yes" {
				t.Errorf("the mutating webhook's patch was not applied: %v", cm.Data)
			}
			err := chain.(admission.ValidationInterface).Validate(rctx, attrs, o)
			if got := errString(err); got != tc.want {
				t.Errorf("Validate: got %q, want %q", got, tc.want)
			}
			if !slices.Equal(w.list, tc.wantWarnings) {
				t.Errorf("warnings: got %q, want %q", w.list, tc.wantWarnings)
			}
		})
	}
	// Validating webhooks are called in parallel: the Service's too when the other denies.
	if len(*mutated) != 2 || len(*validated) != 2 || len(*calledViaService) != 2 {
		t.Fatalf("calls: mutating %d, validating %d, through the Service %d; want 2 each",
			len(*mutated), len(*validated), len(*calledViaService))
	}
	r := (*validated)[0]
	if r.UserInfo.Username != "alice" || !slices.Contains(r.UserInfo.Groups, "devs") {
		t.Errorf("the webhook saw user %+v, want alice in devs", r.UserInfo)
	}
	if r.Kind != (metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}) || r.Operation != admissionv1.Create ||
		r.Namespace != "ns" || r.Name != "c-blue" || !strings.Contains(string(r.Object.Raw), `"mutated":"yes"`) {
		t.Errorf("the validating webhook's request: %+v\nobject %s", r, r.Object.Raw)
	}
}

// TestPolicies: a ValidatingAdmissionPolicy denies with its message (kube's wording) or, with
// the Warn action, warns; a MutatingAdmissionPolicy's patch is applied.
func TestPolicies(t *testing.T) {
	policy := func(name, expression, message string) *admissionregistrationv1.ValidatingAdmissionPolicy {
		return &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: configMapRule[0]}}},
				Validations: []admissionregistrationv1.Validation{{Expression: expression, Message: message}},
			}}
	}
	binding := func(name string, actions ...admissionregistrationv1.ValidationAction) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-binding"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: actions}}
	}
	client := fake.NewClientset(defaulted(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}},
		policy("no-red", "object.data.color != 'red'", "red is not allowed"), binding("no-red", admissionregistrationv1.Deny),
		policy("no-green", "object.data.color != 'green'", "green is discouraged"), binding("no-green", admissionregistrationv1.Warn),
		&admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "label"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: configMapRule[0]}}},
				ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
				Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
					JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/data/mutated", value: "by-policy"}]`}}},
			}},
		&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "label-binding"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "label"}})...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	chain, err := New(testOptions(t, client, factory, ctx.Done()))
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	for _, tc := range []struct {
		color        string
		want         string
		wantWarnings []string
	}{
		{"blue", "", nil},
		{"red", `configmaps "c-red" is forbidden: ValidatingAdmissionPolicy 'no-red' with binding 'no-red-binding' denied request: red is not allowed`, nil},
		{"green", "", []string{`Validation failed for ValidatingAdmissionPolicy 'no-green' with binding 'no-green-binding': green is discouraged`}},
	} {
		t.Run(tc.color, func(t *testing.T) {
			w := &warnings{}
			rctx := warning.WithWarningRecorder(ctx, w)
			cm := &api.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c-" + tc.color, Namespace: "ns"}, Data: map[string]string{"color": tc.color}}
			attrs := admission.NewAttributesRecord(cm, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "ns", cm.Name,
				corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, &metav1.CreateOptions{}, false,
				&user.DefaultInfo{Name: "alice"})
			o := admission.NewObjectInterfacesFromScheme(legacyscheme.Scheme)
			if err := chain.(admission.MutationInterface).Admit(rctx, attrs, o); err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if cm.Data["mutated"] != "by-policy" {
				t.Errorf("the MutatingAdmissionPolicy's patch was not applied: %v", cm.Data)
			}
			err := chain.(admission.ValidationInterface).Validate(rctx, attrs, o)
			if got := errString(err); got != tc.want {
				t.Errorf("Validate: got %q, want %q", got, tc.want)
			}
			if !slices.Equal(w.list, tc.wantWarnings) {
				t.Errorf("warnings: got %q, want %q", w.list, tc.wantWarnings)
			}
		})
	}
}

// TestPolicyStatus: RunPolicyStatus writes kube-controller-manager's type-checking warnings
// and observed generation into a ValidatingAdmissionPolicy's status.
func TestPolicyStatus(t *testing.T) {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "mistyped", Generation: 1},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas == 'three'"}}}}
	client := fake.NewClientset(defaulted(policy)...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	factory := informers.NewSharedInformerFactory(client, 0)
	done := make(chan error, 1)
	go func() {
		done <- RunPolicyStatus(ctx, Options{Client: fakeClient{client}, Factory: factory, RESTMapper: mapper})
	}()

	want := &admissionregistrationv1.TypeChecking{ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{{
		FieldRef: "spec.validations[0].expression",
		Warning:  "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_==_' applied to '(int, string)'\n | object.spec.replicas == 'three'\n | .....................^\n"}}}
	var got admissionregistrationv1.ValidatingAdmissionPolicyStatus
	for ctx.Err() == nil {
		p, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, "mistyped", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got = p.Status; got.ObservedGeneration == 1 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got.ObservedGeneration != 1 || !reflect.DeepEqual(got.TypeChecking, want) {
		t.Errorf("status %+v, want observedGeneration 1, typeChecking %+v", got, want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("RunPolicyStatus: %v", err)
	}
}

// TestLazySchemas: kube's definitions resolver is built on the first type check, once.
func TestLazySchemas(t *testing.T) {
	builds := 0
	l := &lazySchemas{build: func() resolver.SchemaResolver {
		builds++
		return resolver.NewDefinitionsSchemaResolver(generatedopenapi.GetOpenAPIDefinitions, clientgoscheme.Scheme)
	}}
	if builds != 0 {
		t.Fatal("built before use")
	}
	for range 2 {
		s, err := l.ResolveSchema(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
		if err != nil || s == nil || len(s.Properties) == 0 {
			t.Fatalf("Deployment's schema: %v, %v", s, err)
		}
	}
	if builds != 1 {
		t.Errorf("built %d times, want once", builds)
	}
}

package crd

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// renameHook is a conversion webhook between stable.example.com/v1 (spec.color) and v2
// (spec.colour), answering as its path asks: /convert converts, the others misbehave.
type renameHook struct {
	mu      sync.Mutex
	reviews []map[string]any // the requests it got
}

func (h *renameHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var review map[string]any
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var sent map[string]any // kept as it came: the conversion below changes review
	raw, _ := json.Marshal(review)
	_ = json.Unmarshal(raw, &sent)
	h.mu.Lock()
	h.reviews = append(h.reviews, sent)
	h.mu.Unlock()
	req, _ := review["request"].(map[string]any)
	want, _ := req["desiredAPIVersion"].(string)
	objects, _ := req["objects"].([]any)
	converted := []any{}
	for _, o := range objects {
		obj := o.(map[string]any)
		if spec, ok := obj["spec"].(map[string]any); ok {
			from, to := "colour", "color"
			if want == "stable.example.com/v2" {
				from, to = to, from
			}
			if v, ok := spec[from]; ok {
				spec[to] = v
				delete(spec, from)
			}
		}
		obj["apiVersion"] = want
		switch r.URL.Path {
		case "/badname":
			obj["metadata"].(map[string]any)["name"] = "other"
		case "/badgv":
			obj["apiVersion"] = "stable.example.com/v9"
		case "/labels":
			obj["metadata"].(map[string]any)["labels"] = map[string]any{"converted": "yes"}
			obj["metadata"].(map[string]any)["generation"] = 42 // not the webhook's to change
		}
		converted = append(converted, obj)
	}
	response := map[string]any{"uid": req["uid"], "convertedObjects": converted, "result": map[string]any{"status": "Success"}}
	switch r.URL.Path {
	case "/failed":
		response["result"] = map[string]any{"status": "Failure", "message": "cannot convert this"}
	case "/baduid":
		response["uid"] = "nope"
	case "/none":
		response["convertedObjects"] = []any{}
	case "/500":
		http.Error(w, "boom", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": review["apiVersion"], "kind": review["kind"], "response": response})
}

func (h *renameHook) take() []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.reviews
	h.reviews = nil
	return out
}

// tlsServer serves h with a self-signed certificate for 127.0.0.1 and hook.system.svc; it
// returns the server and the certificate (a CA bundle that trusts it).
func tlsServer(t *testing.T, h http.Handler) (*httptest.Server, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hook"},
		DNSNames: []string{"hook.system.svc"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func twoVersionCRD(clientConfig apiextensionsv1.WebhookClientConfig, reviewVersions ...string) *apiextensionsv1.CustomResourceDefinition {
	schema := func(field string) *apiextensionsv1.CustomResourceValidation {
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{field: {Type: "string"}}}}}}
	}
	if len(reviewVersions) == 0 {
		reviewVersions = []string{"v1"}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.stable.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "stable.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema("color")},
				{Name: "v2", Served: true, Schema: schema("colour")},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: reviewVersions, ClientConfig: &clientConfig}},
		},
	}
}

func widget(version, field, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "stable.example.com/" + version, "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns", "uid": "u-1", "resourceVersion": "7", "generation": int64(1)},
		"spec":     map[string]any{field: value},
	}}
}

// served returns the resources of crd by version.
func served(t *testing.T, c *Controller, crd *apiextensionsv1.CustomResourceDefinition) map[string]*catalog.Resource {
	t.Helper()
	crd = crd.DeepCopy()
	crd.Status = c.acceptNames(crd)
	out := map[string]*catalog.Resource{}
	for _, r := range c.resources(crd) {
		out[r.GroupVersion.Version] = r
	}
	if len(out) != 2 {
		t.Fatalf("served versions: %v", out)
	}
	return out
}

func testController() *Controller {
	return &Controller{cat: catalog.New(), log: slog.New(slog.DiscardHandler), conversion: &webhookConversion{}}
}

// webhookAt is the client configuration of a path of the test's conversion webhook.
type webhookAt func(path string) apiextensionsv1.WebhookClientConfig

func TestWebhookConversion(t *testing.T) {
	hook := &renameHook{}
	srv, caPEM := tlsServer(t, hook)
	at := func(path string) apiextensionsv1.WebhookClientConfig {
		u := srv.URL + path
		return apiextensionsv1.WebhookClientConfig{URL: &u, CABundle: caPEM}
	}
	c := testController()
	for _, reviewVersion := range []string{"v1", "v1beta1"} {
		t.Run("ConversionReview "+reviewVersion, func(t *testing.T) { checkConversionReview(t, c, hook, at, reviewVersion) })
	}
	t.Run("admission", func(t *testing.T) { checkAdmissionConversion(t, c, at) })
	t.Run("labels and annotations only", func(t *testing.T) { checkMetadataConversion(t, c, at) })
	checkWebhookFailures(t, c, hook, at, caPEM)
}

// checkConversionReview reads and writes through a webhook speaking reviewVersion.
func checkConversionReview(t *testing.T, c *Controller, hook *renameHook, at webhookAt, reviewVersion string) {
	rs := served(t, c, twoVersionCRD(at("/convert"), reviewVersion))
	v1, v2 := rs["v1"], rs["v2"]
	if v1.Conversion == nil || v2.Conversion == nil || v2.ConvertVersion == nil {
		t.Fatal("a Webhook CRD's versions have no conversion")
	}
	hook.take()

	// Read at v2 what is stored at v1.
	obj := widget("v1", "color", "red")
	if err := v2.Conversion.FromStorage(obj); err != nil {
		t.Fatal(err)
	}
	if obj.GetAPIVersion() != "stable.example.com/v2" || obj.Object["spec"].(map[string]any)["colour"] != "red" || obj.GetResourceVersion() != "7" {
		t.Errorf("read at v2: %v", obj.Object)
	}
	reviews := hook.take()
	if len(reviews) != 1 {
		t.Fatalf("webhook calls: %d", len(reviews))
	}
	if reviews[0]["apiVersion"] != "apiextensions.k8s.io/"+reviewVersion || reviews[0]["kind"] != "ConversionReview" {
		t.Errorf("review sent: %v", reviews[0])
	}
	req := reviews[0]["request"].(map[string]any)
	sent := req["objects"].([]any)[0].(map[string]any)
	if req["desiredAPIVersion"] != "stable.example.com/v2" || sent["metadata"].(map[string]any)["resourceVersion"] != nil {
		t.Errorf("request sent (kube's storage sends objects without resourceVersion): %v", req)
	}

	// Write at v2: stored at v1.
	obj = widget("v2", "colour", "blue")
	if err := v2.Conversion.ToStorage(obj); err != nil {
		t.Fatal(err)
	}
	if obj.GetAPIVersion() != "stable.example.com/v1" || obj.Object["spec"].(map[string]any)["color"] != "blue" {
		t.Errorf("stored from v2: %v", obj.Object)
	}

	// The storage version's own objects need no webhook; objects stored at another
	// version (an earlier storage version) do.
	hook.take()
	obj = widget("v1", "color", "green")
	if err := v1.Conversion.FromStorage(obj); err != nil || obj.Object["spec"].(map[string]any)["color"] != "green" {
		t.Errorf("read at the storage version: %v, %v", obj.Object, err)
	}
	if err := v1.Conversion.ToStorage(obj); err != nil || obj.GetAPIVersion() != "stable.example.com/v1" {
		t.Errorf("write at the storage version: %v, %v", obj.Object, err)
	}
	if n := len(hook.take()); n != 0 {
		t.Errorf("webhook called %d times for objects at the version asked", n)
	}
	obj = widget("v2", "colour", "green")
	if err := v1.Conversion.FromStorage(obj); err != nil || obj.Object["spec"].(map[string]any)["color"] != "green" {
		t.Errorf("read at v1 of an object stored at v2: %v, %v", obj.Object, err)
	}

	// Field management's conversions leave their input alone.
	in := widget("v1", "color", "red")
	out, err := v2.ConvertVersion(in, schema.GroupVersion{Group: "stable.example.com", Version: "v2"})
	if err != nil || out.Object["spec"].(map[string]any)["colour"] != "red" || in.GetAPIVersion() != "stable.example.com/v1" {
		t.Errorf("ConvertVersion: %v (input %v), %v", out, in, err)
	}
}

// checkAdmissionConversion: admission's equivalent resources and conversions go through the webhook.
func checkAdmissionConversion(t *testing.T, c *Controller, at webhookAt) {
	crd := twoVersionCRD(at("/convert"))
	crd.Status = c.acceptNames(crd)
	objs := admissionObjects(crd, newCRDConverter(crd, c.conversion))
	v2 := schema.GroupVersionResource{Group: "stable.example.com", Version: "v2", Resource: "widgets"}
	if got := fmt.Sprint(objs.GetEquivalentResourceMapper().EquivalentResourcesFor(v2, "")); got != "[stable.example.com/v1, Resource=widgets stable.example.com/v2, Resource=widgets]" {
		t.Errorf("equivalent resources: %s", got)
	}
	if got := objs.GetEquivalentResourceMapper().KindFor(v2.GroupResource().WithVersion("v1"), ""); got.String() != "stable.example.com/v1, Kind=Widget" {
		t.Errorf("kind of v1: %s", got)
	}
	out := &unstructured.Unstructured{}
	out.SetGroupVersionKind(schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "Widget"})
	if err := objs.GetObjectConvertor().Convert(widget("v2", "colour", "red"), out, nil); err != nil {
		t.Fatal(err)
	}
	if out.Object["spec"].(map[string]any)["color"] != "red" {
		t.Errorf("admission's conversion to v1: %v", out.Object)
	}
}

// checkMetadataConversion: kube keeps all of a converted object's metadata but labels and annotations.
func checkMetadataConversion(t *testing.T, c *Controller, at webhookAt) {
	rs := served(t, c, twoVersionCRD(at("/labels")))
	obj := widget("v1", "color", "red")
	if err := rs["v2"].Conversion.FromStorage(obj); err != nil {
		t.Fatal(err)
	}
	if obj.GetLabels()["converted"] != "yes" || obj.GetGeneration() != 1 {
		t.Errorf("metadata after conversion (kube keeps all but labels and annotations): %v", obj.Object["metadata"])
	}
}

// checkWebhookFailures: each way a webhook fails, with kube-apiserver's messages (asked of
// kube-reference).
func checkWebhookFailures(t *testing.T, c *Controller, hook *renameHook, at webhookAt, caPEM []byte) {
	down := httptest.NewTLSServer(http.NotFoundHandler())
	downURL := down.URL + "/convert"
	down.Close()
	other, _ := tlsServer(t, hook)
	_, otherCA := tlsServer(t, hook)
	otherURL := other.URL + "/convert"
	for _, tc := range []struct {
		name   string
		config apiextensionsv1.WebhookClientConfig
		read   string // the error reading at v2 an object stored at v1
		write  string // the error storing an object written at v2
	}{
		{"failed", at("/failed"),
			`conversion webhook for stable.example.com/v1, Kind=Widget failed: cannot convert this`,
			`conversion webhook for stable.example.com/v2, Kind=Widget failed: cannot convert this`},
		{"wrong uid", at("/baduid"),
			`conversion webhook for stable.example.com/v1, Kind=Widget failed: expected response.uid=`,
			`conversion webhook for stable.example.com/v2, Kind=Widget failed: expected response.uid=`},
		{"no objects", at("/none"),
			`conversion webhook for stable.example.com/v1, Kind=Widget returned 0 objects, expected 1`,
			`conversion webhook for stable.example.com/v2, Kind=Widget returned 0 objects, expected 1`},
		{"other name", at("/badname"),
			`conversion webhook for stable.example.com/v1, Kind=Widget returned invalid object: must have the same name: w != other`,
			`conversion webhook for stable.example.com/v2, Kind=Widget returned invalid object: must have the same name: w != other`},
		{"other version", at("/badgv"),
			`conversion webhook for stable.example.com/v1, Kind=Widget returned invalid object at index 0: invalid groupVersion (expected stable.example.com/v2, received stable.example.com/v9)`,
			`conversion webhook for stable.example.com/v2, Kind=Widget returned invalid object at index 0: invalid groupVersion (expected stable.example.com/v1, received stable.example.com/v9)`},
		{"500", at("/500"),
			`conversion webhook for stable.example.com/v1, Kind=Widget failed: an error on the server ("boom") has prevented the request from succeeding`,
			`conversion webhook for stable.example.com/v2, Kind=Widget failed: an error on the server ("boom") has prevented the request from succeeding`},
		{"down", apiextensionsv1.WebhookClientConfig{URL: &downURL, CABundle: caPEM},
			`conversion webhook for stable.example.com/v1, Kind=Widget failed: Post "` + downURL + `?timeout=30s": dial tcp`,
			`conversion webhook for stable.example.com/v2, Kind=Widget failed: Post "` + downURL + `?timeout=30s": dial tcp`},
		{"caBundle of another server", apiextensionsv1.WebhookClientConfig{URL: &otherURL, CABundle: otherCA},
			`conversion webhook for stable.example.com/v1, Kind=Widget failed: Post "` + otherURL + `?timeout=30s": tls: failed to verify certificate: x509: certificate signed by unknown authority`,
			`conversion webhook for stable.example.com/v2, Kind=Widget failed: Post "` + otherURL + `?timeout=30s": tls: failed to verify certificate: x509: certificate signed by unknown authority`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v2 := served(t, c, twoVersionCRD(tc.config))["v2"]
			err := v2.Conversion.FromStorage(widget("v1", "color", "red"))
			if err == nil || !strings.HasPrefix(err.Error(), tc.read) {
				t.Errorf("read: %v\nwant: %s...", err, tc.read)
			}
			if _, ok := err.(apierrors.APIStatus); ok {
				t.Errorf("a read's error is an API error (%v): kube's is an InternalError the caller makes", err)
			}
			err = v2.Conversion.ToStorage(widget("v2", "colour", "red"))
			var status *apierrors.StatusError
			if !errors.As(err, &status) || !strings.HasPrefix(status.ErrStatus.Message, tc.write) {
				t.Fatalf("write: %v\nwant: %s...", err, tc.write)
			}
			// kube-apiserver answers a 500 with no reason: its storage returns the bare error.
			if status.ErrStatus.Code != http.StatusInternalServerError || status.ErrStatus.Reason != metav1.StatusReasonUnknown {
				t.Errorf("write error status: %+v", status.ErrStatus)
			}
		})
	}
}

// TestWebhookConversionService: service references resolve through the resolver
// UseWebhookConversion sets, including for resources registered before it was called.
func TestWebhookConversionService(t *testing.T) {
	hook := &renameHook{}
	srv, caPEM := tlsServer(t, hook)
	c := testController()
	rs := served(t, c, twoVersionCRD(apiextensionsv1.WebhookClientConfig{CABundle: caPEM,
		Service: &apiextensionsv1.ServiceReference{Namespace: "system", Name: "hook", Path: ptrTo("/convert"), Port: ptrTo(int32(443))}}))
	u, _ := url.Parse(srv.URL)
	resolver := &fixedResolver{to: u}
	c.UseWebhookConversion(resolver, nil)
	obj := widget("v1", "color", "red")
	if err := rs["v2"].Conversion.FromStorage(obj); err != nil {
		t.Fatal(err)
	}
	if obj.Object["spec"].(map[string]any)["colour"] != "red" || len(hook.take()) != 1 {
		t.Errorf("converted through the service: %v", obj.Object)
	}
	if got := resolver.asked(); got != "system/hook:443" {
		t.Errorf("resolver asked for %q", got)
	}
}

type fixedResolver struct {
	to  *url.URL
	mu  sync.Mutex
	got string
}

func (r *fixedResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = fmt.Sprintf("%s/%s:%d", namespace, name, port)
	return r.to, nil
}

func (r *fixedResolver) asked() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got
}

func ptrTo[T any](v T) *T { return &v }

// TestNoneConversion: CRDs without webhooks convert by apiVersion alone, in lapis's pipeline
// and for admission.
func TestNoneConversion(t *testing.T) {
	c := testController()
	crd := twoVersionCRD(apiextensionsv1.WebhookClientConfig{})
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	for v, r := range served(t, c, crd) {
		if r.Conversion != nil || r.ConvertVersion != nil {
			t.Errorf("%s: a None CRD's version converts through a converter", v)
		}
	}
	crd.Status = c.acceptNames(crd)
	objs := admissionObjects(crd, newCRDConverter(crd, c.conversion))
	out := &unstructured.Unstructured{}
	out.SetGroupVersionKind(schema.GroupVersionKind{Group: "stable.example.com", Version: "v1", Kind: "Widget"})
	if err := objs.GetObjectConvertor().Convert(widget("v2", "colour", "red"), out, nil); err != nil {
		t.Fatal(err)
	}
	if out.GetAPIVersion() != "stable.example.com/v1" || out.Object["spec"].(map[string]any)["colour"] != "red" {
		t.Errorf("admission's conversion to v1 without a webhook: %v", out.Object)
	}
	if n := len(objs.GetEquivalentResourceMapper().EquivalentResourcesFor(schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "widgets"}, "")); n != 2 {
		t.Errorf("equivalent resources: %d", n)
	}
}

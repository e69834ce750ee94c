package clientgo

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
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// The custom resource converted by a webhook: gadgets.conversion.lapis.dev, whose v1 (the
// storage version) has spec.color and v2 spec.colour.
const gadgetGroup = "conversion.lapis.dev"

func gadgetGVR(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: gadgetGroup, Version: version, Resource: "gadgets"}
}

// conversionHook is a conversion webhook renaming spec.color (v1) to spec.colour (v2) and
// back, counting its calls.
type conversionHook struct {
	calls atomic.Int64
}

func (h *conversionHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.calls.Add(1)
	review := &apiextensionsv1.ConversionReview{}
	if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprint("bad review: ", err), http.StatusBadRequest)
		return
	}
	req := review.Request
	resp := &apiextensionsv1.ConversionResponse{UID: req.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range req.Objects {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw.Raw); err != nil {
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
			break
		}
		from, to := "colour", "color"
		if req.DesiredAPIVersion == gadgetGroup+"/v2" {
			from, to = to, from
		}
		if v, ok, _ := unstructured.NestedString(obj.Object, "spec", from); ok {
			unstructured.RemoveNestedField(obj.Object, "spec", from)
			_ = unstructured.SetNestedField(obj.Object, v, "spec", to)
		}
		obj.SetAPIVersion(req.DesiredAPIVersion)
		out, _ := obj.MarshalJSON()
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
	}
	review.Request, review.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// validatingHook is an admission webhook that denies gadgets whose spec.color is "forbidden",
// recording the apiVersion of each object it is shown.
type validatingHook struct {
	mu   sync.Mutex
	seen []string
}

func (h *validatingHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	review := &admissionv1.AdmissionReview{}
	if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprint("bad review: ", err), http.StatusBadRequest)
		return
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(review.Request.Object.Raw); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	h.seen = append(h.seen, review.Request.Kind.Version+" "+obj.GetAPIVersion())
	h.mu.Unlock()
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	if color, _, _ := unstructured.NestedString(obj.Object, "spec", "color"); color == "forbidden" {
		resp.Allowed, resp.Result = false, &metav1.Status{Message: "color forbidden"}
	}
	review.Request, review.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

func (h *validatingHook) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.seen
	h.seen = nil
	return out
}

// hookServer serves h over TLS on ip with a certificate for ip and for name (a Service's DNS
// name); it returns the server and the CA bundle that trusts it.
func hookServer(t *testing.T, ip, name string, h http.Handler) (*httptest.Server, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		DNSNames: []string{name}, IPAddresses: []net.IP{net.ParseIP(ip)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener.Close()
	srv.Listener = l
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// gadgetCRD defines gadgets, converted by the webhook clientConfig points at.
func gadgetCRD(clientConfig apiextensionsv1.WebhookClientConfig) *apiextensionsv1.CustomResourceDefinition {
	schema := func(field string) *apiextensionsv1.CustomResourceValidation {
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{field: {Type: "string"}}}}}}
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + gadgetGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gadgetGroup, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"},
			// v2 first: deleting the CRD deletes its objects at the storage version all the
			// same, with the webhook down.
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v2", Served: true, Schema: schema("colour")},
				{Name: "v1", Served: true, Storage: true, Schema: schema("color")},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}, ClientConfig: &clientConfig}},
		},
	}
}

// installGadgets creates the CRD and waits until both versions are served.
func installGadgets(t *testing.T, ctx context.Context, dyn dynamic.Interface, ns string, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	crds := apiextensionsclient.NewForConfigOrDie(servers.stable).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a CRD with a conversion webhook: %v", err)
	}
	t.Cleanup(func() {
		_ = crds.Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
		poll.Eventually(t, 30*time.Second, "CRD "+crd.Name+" gone", func() (bool, string) {
			_, err := crds.Get(context.Background(), crd.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})
	for _, v := range []string{"v1", "v2"} {
		poll.Eventually(t, 10*time.Second, "gadgets served at "+v, func() (bool, string) {
			_, err := dyn.Resource(gadgetGVR(v)).Namespace(ns).List(ctx, metav1.ListOptions{})
			return err == nil, fmt.Sprint(err)
		})
	}
}

func gadget(version, name, field, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gadgetGroup + "/" + version, "kind": "Gadget",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{field: value},
	}}
}

func specOf(obj *unstructured.Unstructured) map[string]any {
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	return spec
}

func TestCRDConversionWebhook(t *testing.T) {
	cs := clientset(t, servers.stable)
	ns := namespace(t, cs)
	ctx := ctxFor(t, 2*time.Minute)
	dyn := dynamic.NewForConfigOrDie(servers.stable)
	hook, validating := &conversionHook{}, &validatingHook{}
	mux := http.NewServeMux()
	mux.Handle("/convert", hook)
	mux.Handle("/validate", validating)
	srv, caPEM := hookServer(t, "127.0.0.1", "hook."+ns+".svc", mux)
	installGadgets(t, ctx, dyn, ns, gadgetCRD(apiextensionsv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/convert"), CABundle: caPEM}))
	g := &gadgetVersions{ctx: ctx, v1: dyn.Resource(gadgetGVR("v1")).Namespace(ns), v2: dyn.Resource(gadgetGVR("v2")).Namespace(ns)}

	// The steps run in order: each sees the gadgets the ones before made.
	listRV := g.writeAtV1ReadAtV2(t)
	w := g.watchAtV2(t, listRV)
	g.writeAtV2ReadAtV1(t, w)
	g.applyAtBothVersions(t)
	g.admissionSeesStorageVersion(t, cs, ns, srv.URL, caPEM, validating)
	g.webhookDown(t, hook, srv)
}

// gadgetVersions is the test namespace's gadgets at v1 (the storage version) and at v2, which
// the conversion webhook translates (v1's spec.color is v2's spec.colour).
type gadgetVersions struct {
	ctx    context.Context
	v1, v2 dynamic.ResourceInterface
}

// writeAtV1ReadAtV2 writes gadget a at v1, the storage version, and reads and lists it at v2,
// also from the watch cache; it returns the last list's resourceVersion.
func (g *gadgetVersions) writeAtV1ReadAtV2(t *testing.T) string {
	created, err := g.v1.Create(g.ctx, gadget("v1", "a", "color", "red"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.v2.Get(g.ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetAPIVersion() != gadgetGroup+"/v2" || fmt.Sprint(specOf(got)) != "map[colour:red]" || got.GetResourceVersion() != created.GetResourceVersion() || got.GetUID() != created.GetUID() {
		t.Errorf("read at v2: %v", got.Object)
	}
	list, err := g.v2.List(g.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].GetAPIVersion() != gadgetGroup+"/v2" || fmt.Sprint(specOf(&list.Items[0])) != "map[colour:red]" {
		t.Errorf("listed at v2: %v", list.Items)
	}
	// The same from the watch cache.
	list, err = g.v2.List(g.ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil || len(list.Items) != 1 || fmt.Sprint(specOf(&list.Items[0])) != "map[colour:red]" {
		t.Errorf("listed at v2 from the cache: %v, %v", list, err)
	}

	return list.GetResourceVersion()
}

// watchAtV2 watches at v2 from rv: the existing object, then one written at v1. It returns
// the watch, stopped when the test ends.
func (g *gadgetVersions) watchAtV2(t *testing.T, rv string) watch.Interface {
	w, err := g.v2.Watch(g.ctx, metav1.ListOptions{ResourceVersion: rv, SendInitialEvents: ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	if _, err := g.v1.Create(g.ctx, gadget("v1", "b", "color", "green"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for len(seen) < 2 {
		ev := nextEvent(t, w, 10*time.Second)
		if ev.Type == watch.Bookmark {
			continue
		}
		obj, ok := ev.Object.(*unstructured.Unstructured)
		if ev.Type != watch.Added || !ok || obj.GetAPIVersion() != gadgetGroup+"/v2" {
			t.Fatalf("watch event at v2: %s %s", ev.Type, describeObject(ev.Object))
		}
		seen[obj.GetName()] = fmt.Sprint(specOf(obj))
	}
	if fmt.Sprint(seen) != "map[a:map[colour:red] b:map[colour:green]]" {
		t.Errorf("watched at v2: %v", seen)
	}

	return w
}

// writeAtV2ReadAtV1: written at v2, stored at v1, and seen by w, watching at v2; then updated
// and patched at v2 and read at v1.
func (g *gadgetVersions) writeAtV2ReadAtV1(t *testing.T, w watch.Interface) {
	if _, err := g.v2.Create(g.ctx, gadget("v2", "c", "colour", "blue"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := g.v1.Get(g.ctx, "c", metav1.GetOptions{}); err != nil || fmt.Sprint(specOf(got)) != "map[color:blue]" {
		t.Errorf("read at v1 what was written at v2: %v, %v", got, err)
	}
	ev := nextEvent(t, w, 10*time.Second)
	if obj, ok := ev.Object.(*unstructured.Unstructured); ev.Type != watch.Added || !ok || obj.GetName() != "c" || fmt.Sprint(specOf(obj)) != "map[colour:blue]" {
		t.Errorf("watched at v2: %s %s", ev.Type, describeObject(ev.Object))
	}
	// Updated and patched at v2.
	cur, err := g.v2.Get(g.ctx, "c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(cur.Object, "purple", "spec", "colour")
	if _, err := g.v2.Update(g.ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.v2.Patch(g.ctx, "a", types.MergePatchType, []byte(`{"spec":{"colour":"orange"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "orange", "c": "purple"} {
		if got, err := g.v1.Get(g.ctx, name, metav1.GetOptions{}); err != nil || fmt.Sprint(specOf(got)) != "map[color:"+want+"]" {
			t.Errorf("read at v1 after a v2 write: %v, %v", got, err)
		}
	}

}

// applyAtBothVersions: server-side apply at both versions, each manager's fields at its own version.
func (g *gadgetVersions) applyAtBothVersions(t *testing.T) {
	apply := func(r dynamic.ResourceInterface, obj *unstructured.Unstructured, manager string) *unstructured.Unstructured {
		t.Helper()
		out, err := r.Apply(g.ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: manager, Force: true})
		if err != nil {
			t.Fatalf("apply by %s: %v", manager, err)
		}
		return out
	}
	apply(g.v2, gadget("v2", "d", "colour", "white"), "v2-manager")
	out := apply(g.v1, gadget("v1", "d", "color", "black"), "v1-manager")
	if fmt.Sprint(specOf(out)) != "map[color:black]" {
		t.Errorf("applied at v1 over v2: %v", out.Object)
	}
	managers := map[string]string{}
	for _, m := range out.GetManagedFields() {
		managers[m.Manager] = m.APIVersion + " " + string(m.FieldsV1.Raw)
	}
	// The v1 manager took spec.color from the v2 manager (its spec.colour is the same field).
	if managers["v1-manager"] != gadgetGroup+`/v1 {"f:spec":{"f:color":{}}}` || strings.Contains(managers["v2-manager"], "colour") {
		t.Errorf("managedFields after applies at v2 then v1: %v", managers)
	}

}

// admissionSeesStorageVersion: an admission webhook (served at hookURL) registered for v1 only
// (matchPolicy Equivalent, the default) sees writes at v2 converted to v1.
func (g *gadgetVersions) admissionSeesStorageVersion(t *testing.T, cs kubernetes.Interface, ns, hookURL string, caPEM []byte, validating *validatingHook) {
	none, fail := admissionregistrationv1.SideEffectClassNone, admissionregistrationv1.Fail
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "gadgets-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "gadgets.conversion.lapis.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(hookURL + "/validate"), CABundle: caPEM},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{gadgetGroup}, APIVersions: []string{"v1"}, Resources: []string{"gadgets"}},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			FailurePolicy:     &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"}}}}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(g.ctx, config, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), config.Name, metav1.DeleteOptions{})
	})
	poll.Eventually(t, 20*time.Second, "the admission webhook called", func() (bool, string) {
		_, err := g.v2.Create(g.ctx, gadget("v2", "probe", "colour", "forbidden"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "denied the request"), fmt.Sprint(err)
	})
	validating.take()
	_, err := g.v2.Create(g.ctx, gadget("v2", "g", "colour", "forbidden"), metav1.CreateOptions{})
	// A denial without a code is kube's 400.
	expectStatus(t, err, http.StatusBadRequest, metav1.StatusReasonUnknown, `admission webhook "gadgets.conversion.lapis.dev" denied the request: color forbidden`)
	if _, err := g.v2.Create(g.ctx, gadget("v2", "h", "colour", "yellow"), metav1.CreateOptions{}); err != nil {
		t.Errorf("a gadget the admission webhook allows: %v", err)
	}
	if got := fmt.Sprint(validating.take()); got != "[v1 "+gadgetGroup+"/v1 v1 "+gadgetGroup+"/v1]" {
		t.Errorf("the admission webhook was shown: %s (kind version, object apiVersion)", got)
	}
	_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(g.ctx, config.Name, metav1.DeleteOptions{})
	// Admission learns of the deletion through its informer, as kube-apiserver's does: wait
	// until the webhook is no longer called before taking its server down.
	poll.Eventually(t, 20*time.Second, "the admission webhook no longer called", func() (bool, string) {
		_, err := g.v1.Create(g.ctx, gadget("v1", "probe", "color", "forbidden"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, fmt.Sprint(err)
	})

}

// webhookDown: the conversion webhook down, reads and writes needing it fail with
// kube-apiserver's 500 and its converter's message; those at the storage version go on.
func (g *gadgetVersions) webhookDown(t *testing.T, hook *conversionHook, srv *httptest.Server) {
	calls := hook.calls.Load()
	if calls == 0 {
		t.Fatal("the webhook was never called")
	}
	srv.Close()
	refused := `Post "` + srv.URL + `/convert?timeout=30s": dial tcp ` + strings.TrimPrefix(srv.URL, "https://") + `: connect: connection refused`
	if _, err := g.v1.Get(g.ctx, "a", metav1.GetOptions{}); err != nil {
		t.Errorf("read at the storage version with the webhook down: %v", err)
	}
	if _, err := g.v1.Create(g.ctx, gadget("v1", "f", "color", "grey"), metav1.CreateOptions{}); err != nil {
		t.Errorf("write at the storage version with the webhook down: %v", err)
	}
	_, err := g.v2.Get(g.ctx, "a", metav1.GetOptions{})
	expectConversionFailure(t, err, metav1.StatusReasonInternalError,
		"Internal error occurred: conversion webhook for "+gadgetGroup+"/v1, Kind=Gadget failed: "+refused)
	// Lists too (kube-apiserver's message differs: its storage reports a corrupt object).
	for _, rv := range []string{"", "0"} {
		_, err = g.v2.List(g.ctx, metav1.ListOptions{ResourceVersion: rv})
		if s := statusOf(t, err); s.Code != http.StatusInternalServerError || !strings.Contains(s.Message, "conversion webhook for "+gadgetGroup+"/v1, Kind=Gadget failed: "+refused) {
			t.Errorf("list at v2 (resourceVersion %q) with the webhook down: %d %q %q", rv, s.Code, s.Reason, s.Message)
		}
	}
	_, err = g.v2.Create(g.ctx, gadget("v2", "e", "colour", "blue"), metav1.CreateOptions{})
	expectConversionFailure(t, err, metav1.StatusReasonUnknown,
		"conversion webhook for "+gadgetGroup+"/v2, Kind=Gadget failed: "+refused)
}

// expectConversionFailure: a failed conversion is kube-apiserver's 500 with its message.
func expectConversionFailure(t *testing.T, err error, reason metav1.StatusReason, message string) {
	t.Helper()
	s := statusOf(t, err)
	if s.Code != http.StatusInternalServerError || s.Reason != reason || s.Message != message {
		t.Errorf("got status %d %q %q,\nwant       500 %q %q", s.Code, s.Reason, s.Message, reason, message)
	}
}

// TestCRDConversionWebhookThroughService: a conversion webhook's service reference resolves
// through the Service's EndpointSlices, as admission webhooks' do.
func TestCRDConversionWebhookThroughService(t *testing.T) {
	cs := clientset(t, servers.stable)
	ns := namespace(t, cs)
	ctx := ctxFor(t, time.Minute)
	dyn := dynamic.NewForConfigOrDie(servers.stable)
	ip := hostIP(t)
	hook := &conversionHook{}
	srv, caPEM := hookServer(t, ip, "hook."+ns+".svc", hook)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	var portNumber int32
	fmt.Sscan(port, &portNumber)

	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "hook-manual", Labels: map[string]string{discoveryv1.LabelServiceName: "hook"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(portNumber)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crd := gadgetCRD(apiextensionsv1.WebhookClientConfig{CABundle: caPEM,
		Service: &apiextensionsv1.ServiceReference{Namespace: ns, Name: "hook", Path: ptr.To("/convert")}})
	installGadgets(t, ctx, dyn, ns, crd)

	v1, v2 := dyn.Resource(gadgetGVR("v1")).Namespace(ns), dyn.Resource(gadgetGVR("v2")).Namespace(ns)
	if _, err := v2.Create(ctx, gadget("v2", "a", "colour", "red"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("written at v2 through the service's webhook: %v", err)
	}
	if got, err := v1.Get(ctx, "a", metav1.GetOptions{}); err != nil || fmt.Sprint(specOf(got)) != "map[color:red]" {
		t.Errorf("read at v1: %v, %v", got, err)
	}
	if hook.calls.Load() == 0 {
		t.Error("the service's webhook was never called")
	}
}

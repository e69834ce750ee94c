package clientgo

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/lapis-dev/lapis/internal/testkit/poll"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The custom resource the webhooks handle: widgets.webhook.lapis.dev, as a kubebuilder project
// would type it.
const widgetGroup = "webhook.lapis.dev"

var widgetGVR = schema.GroupVersionResource{Group: widgetGroup, Version: "v1", Resource: "widgets"}

type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec `json:"spec,omitempty"`
}

type WidgetSpec struct {
	Size  *int64 `json:"size,omitempty"`
	Color string `json:"color,omitempty"`
}

func (w *Widget) DeepCopyObject() runtime.Object {
	out := &Widget{TypeMeta: w.TypeMeta, Spec: WidgetSpec{Color: w.Spec.Color}}
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if w.Spec.Size != nil {
		out.Spec.Size = ptr.To(*w.Spec.Size)
	}
	return out
}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + widgetGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgetGroup, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size": {Type: "integer"}, "color": {Type: "string"}}}}}}}},
		},
	}
}

// testLabel marks the objects of these tests; webhooks and policies select only them, in the
// test's namespace, so that other tests on the same lapis never meet them.
const testLabel = "lapis.dev/admission-test"

func testSelectors(ns string) (namespaceSelector, objectSelector *metav1.LabelSelector) {
	return &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
		&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: testLabel, Operator: metav1.LabelSelectorOpExists}}}
}

// calls records who each webhook was called by, and for what.
type calls struct {
	mu      sync.Mutex
	seen    []string          // "path OPERATION user"
	options map[string]string // "path OPERATION name" -> the request's options, as sent
}

func (c *calls) add(ctx context.Context, path string) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, fmt.Sprintf("%s %s %s %s", path, req.Operation, req.Name, req.UserInfo.Username))
	if c.options == nil {
		c.options = map[string]string{}
	}
	c.options[fmt.Sprintf("%s %s %s", path, req.Operation, req.Name)] = string(req.Options.Raw)
}

func (c *calls) snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seen)
}

// operation is the admission request's operation, for the defaulters to write down.
func operation(ctx context.Context) string {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return "unknown"
	}
	return string(req.Operation)
}

// configMapHooks default and validate ConfigMaps: the defaulter labels and writes down the
// operation; the validator refuses red, warns on a color change.
type configMapHooks struct{ calls *calls }

func (h configMapHooks) Default(ctx context.Context, cm *corev1.ConfigMap) error {
	h.calls.add(ctx, "mutate-configmap")
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels["defaulted-by"] = "webhook"
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data["defaulted-on"] = operation(ctx)
	return nil
}

func (h configMapHooks) ValidateCreate(ctx context.Context, cm *corev1.ConfigMap) (admission.Warnings, error) {
	h.calls.add(ctx, "validate-configmap")
	if cm.Data["color"] == "red" {
		return nil, fmt.Errorf("red is not allowed")
	}
	return nil, nil
}

func (h configMapHooks) ValidateUpdate(ctx context.Context, old, cm *corev1.ConfigMap) (admission.Warnings, error) {
	h.calls.add(ctx, "validate-configmap")
	if cm.Data["color"] == "red" {
		return admission.Warnings{"red was asked for"}, fmt.Errorf("red is not allowed")
	}
	if old.Data["color"] != cm.Data["color"] {
		return admission.Warnings{fmt.Sprintf("color changed from %s to %s", old.Data["color"], cm.Data["color"])}, nil
	}
	return nil, nil
}

func (h configMapHooks) ValidateDelete(context.Context, *corev1.ConfigMap) (admission.Warnings, error) {
	return nil, nil
}

// widgetHooks default a widget's size and refuse sizes over 10.
type widgetHooks struct{ calls *calls }

func (h widgetHooks) Default(ctx context.Context, w *Widget) error {
	h.calls.add(ctx, "mutate-widget")
	if w.Spec.Size == nil {
		w.Spec.Size = ptr.To[int64](3)
	}
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations["defaulted-on"] = operation(ctx)
	return nil
}

func (h widgetHooks) ValidateCreate(ctx context.Context, w *Widget) (admission.Warnings, error) {
	h.calls.add(ctx, "validate-widget")
	return nil, h.check(w)
}

func (h widgetHooks) ValidateUpdate(ctx context.Context, old, w *Widget) (admission.Warnings, error) {
	h.calls.add(ctx, "validate-widget")
	var warnings admission.Warnings
	if old.Spec.Color != w.Spec.Color {
		warnings = append(warnings, fmt.Sprintf("widget color changed from %s to %s", old.Spec.Color, w.Spec.Color))
	}
	return warnings, h.check(w)
}

func (h widgetHooks) ValidateDelete(context.Context, *Widget) (admission.Warnings, error) {
	return nil, nil
}

func (widgetHooks) check(w *Widget) error {
	if w.Spec.Size != nil && *w.Spec.Size > 10 {
		return fmt.Errorf("size %d is over 10", *w.Spec.Size)
	}
	return nil
}

// warningLog collects the Warning headers a client receives.
type warningLog struct {
	mu   sync.Mutex
	list []string
}

func (w *warningLog) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warningLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// TestWebhookInstallOptions is envtest's webhook set-up against a running lapis
// (UseExistingCluster): envtest installs a CRD and a mutating and a validating webhook
// configuration pointing at a controller-runtime webhook server (envtest's certificates, its
// `url` rewriting), and the webhooks built for a built-in type (ConfigMap) and the custom
// resource are called on creates and updates, as the request's user, their patches applied,
// their denials and warnings returned to the client.
func TestWebhookInstallOptions(t *testing.T) {
	cs := clientset(t, servers.stable)
	ns := namespace(t, cs)
	ctx := ctxFor(t, 2*time.Minute)
	logs := &logBuffer{}
	log.SetLogger(funcr.New(logs.add, funcr.Options{}))
	// Registered first, so it runs after the manager's and envtest's stops, which may fail.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller-runtime's log:\n%s", logs)
		}
	})

	env := installWebhooksWithEnvtest(t, cs, ns)
	seen := serveWebhooks(t, ctx, &env.WebhookInstallOptions)

	warnings := &warningLog{}
	cfg := rest.CopyConfig(servers.stable)
	cfg.WarningHandler = warnings
	cms := clientset(t, cfg).CoreV1().ConfigMaps(ns)
	labels := map[string]string{testLabel: "yes"}
	// lapis reads webhook configurations through informers, as kube-apiserver: a dry run
	// (webhooks with sideEffects None are called on dry runs) tells when they are in force.
	poll.Eventually(t, 20*time.Second, "the mutating webhook called", func() (bool, string) {
		cm, err := cms.Create(ctx, configMap("probe", nil, labels), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err.Error()
		}
		return cm.Labels["defaulted-by"] == "webhook", fmt.Sprintf("labels %v", cm.Labels)
	})
	warnings.take()

	checkConfigMapWebhooks(t, ctx, cms, labels, warnings)
	checkWidgetWebhooks(t, ctx, dynamic.NewForConfigOrDie(cfg).Resource(widgetGVR).Namespace(ns), warnings)
	checkWebhookCalls(t, ctx, ns, labels, seen)
}

// installWebhooksWithEnvtest has envtest (against lapis) install the Widget CRD and, for the
// test's namespace, a mutating and a validating configuration with a webhook each for
// ConfigMaps and Widgets, pointed at envtest's local webhook server.
func installWebhooksWithEnvtest(t *testing.T, cs kubernetes.Interface, ns string) *envtest.Environment {
	nsSel, objSel := testSelectors(ns)
	rules := func(group, resource string) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1"}, Resources: []string{resource}},
		}}
	}
	service := func(path string) admissionregistrationv1.WebhookClientConfig {
		// As kubebuilder writes them; envtest turns them into URLs of its local server.
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: "system", Name: "webhook-service", Path: ptr.To(path)}}
	}
	none := admissionregistrationv1.SideEffectClassNone
	mutating := func(name, group, resource, path string) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{Name: name, ClientConfig: service(path), Rules: rules(group, resource),
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: nsSel, ObjectSelector: objSel}
	}
	validating := func(name, group, resource, path string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: service(path), Rules: rules(group, resource),
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"}, NamespaceSelector: nsSel, ObjectSelector: objSel}
	}
	env := &envtest.Environment{
		UseExistingCluster: ptr.To(true),
		Config:             servers.stable,
		CRDs:               []*apiextensionsv1.CustomResourceDefinition{widgetCRD()},
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			MutatingWebhooks: []*admissionregistrationv1.MutatingWebhookConfiguration{{
				ObjectMeta: metav1.ObjectMeta{Name: "mutating-" + ns},
				Webhooks: []admissionregistrationv1.MutatingWebhook{
					mutating("mconfigmap.lapis.dev", "", "configmaps", "/mutate--v1-configmap"),
					mutating("mwidget.lapis.dev", widgetGroup, "widgets", "/mutate-webhook-lapis-dev-v1-widget"),
				},
			}},
			ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{{
				ObjectMeta: metav1.ObjectMeta{Name: "validating-" + ns},
				Webhooks: []admissionregistrationv1.ValidatingWebhook{
					validating("vconfigmap.lapis.dev", "", "configmaps", "/validate--v1-configmap"),
					validating("vwidget.lapis.dev", widgetGroup, "widgets", "/validate-webhook-lapis-dev-v1-widget"),
				},
			}},
		},
	}
	if _, err := env.Start(); err != nil {
		t.Fatalf("envtest against lapis: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), "mutating-"+ns, metav1.DeleteOptions{})
		_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), "validating-"+ns, metav1.DeleteOptions{})
		if err := env.Stop(); err != nil {
			t.Errorf("envtest stop: %v", err)
		}
	})
	return env
}

// serveWebhooks starts a controller-runtime manager serving the webhooks where envtest pointed
// them (stopped when the test ends) and returns the record of their calls.
func serveWebhooks(t *testing.T, ctx context.Context, wio *envtest.WebhookInstallOptions) *calls {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	scheme.AddKnownTypes(schema.GroupVersion{Group: widgetGroup, Version: "v1"}, &Widget{})
	mgr, err := ctrl.NewManager(servers.stable, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer: webhook.NewServer(webhook.Options{
			Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir}),
	})
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	seen := &calls{}
	if err := ctrl.NewWebhookManagedBy(mgr, &corev1.ConfigMap{}).
		WithDefaulter(configMapHooks{seen}).WithValidator(configMapHooks{seen}).Complete(); err != nil {
		t.Fatal(err)
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &Widget{}).
		WithDefaulter(widgetHooks{seen}).WithValidator(widgetHooks{seen}).Complete(); err != nil {
		t.Fatal(err)
	}
	mgrCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	poll.Eventually(t, 20*time.Second, "the webhook server serving", func() (bool, string) {
		err := mgr.GetWebhookServer().StartedChecker()(nil)
		return err == nil, fmt.Sprint(err)
	})
	return seen
}

// checkConfigMapWebhooks: a ConfigMap is created defaulted; updated, defaulted again and
// warned about; red refused. One the webhooks do not select is left alone.
func checkConfigMapWebhooks(t *testing.T, ctx context.Context, cms typedcorev1.ConfigMapInterface, labels map[string]string, warnings *warningLog) {
	cm, err := cms.Create(ctx, configMap("paint", map[string]string{"color": "blue"}, labels), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if cm.Labels["defaulted-by"] != "webhook" || cm.Data["defaulted-on"] != "CREATE" {
		t.Errorf("created ConfigMap not defaulted by the webhook: labels %v data %v", cm.Labels, cm.Data)
	}
	cm.Data["color"] = "green"
	delete(cm.Labels, "defaulted-by")
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if cm.Labels["defaulted-by"] != "webhook" || cm.Data["defaulted-on"] != "UPDATE" {
		t.Errorf("updated ConfigMap not defaulted by the webhook: labels %v data %v", cm.Labels, cm.Data)
	}
	if got, want := warnings.take(), []string{"color changed from blue to green"}; !slices.Equal(got, want) {
		t.Errorf("update warnings %q, want %q", got, want)
	}
	stored, err := cms.Get(ctx, "paint", metav1.GetOptions{})
	if err != nil || stored.Data["defaulted-on"] != "UPDATE" || stored.Data["color"] != "green" {
		t.Errorf("stored ConfigMap: %v %v", stored.Data, err)
	}
	_, err = cms.Create(ctx, configMap("red", map[string]string{"color": "red"}, labels), metav1.CreateOptions{})
	expectStatus(t, err, http.StatusForbidden, metav1.StatusReasonForbidden, `admission webhook "vconfigmap.lapis.dev" denied the request: red is not allowed`)
	cm.Data["color"] = "red"
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	expectStatus(t, err, http.StatusForbidden, metav1.StatusReasonForbidden, `admission webhook "vconfigmap.lapis.dev" denied the request: red is not allowed`)
	if got, want := warnings.take(), []string{"red was asked for"}; !slices.Equal(got, want) {
		t.Errorf("denied update's warnings %q, want %q", got, want)
	}
	// An object the webhooks do not select is left alone.
	plain, err := cms.Create(ctx, configMap("plain", map[string]string{"color": "red"}, nil), metav1.CreateOptions{})
	if err != nil || plain.Labels["defaulted-by"] != "" {
		t.Errorf("a ConfigMap without the test's label: %v, labels %v", err, plain.Labels)
	}
}

// checkWidgetWebhooks: the custom resource's size is defaulted on create, the operation
// written down on update, sizes over 10 refused.
func checkWidgetWebhooks(t *testing.T, ctx context.Context, dyn dynamic.ResourceInterface, warnings *warningLog) {
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": schema.GroupVersion{Group: widgetGroup, Version: "v1"}.String(), "kind": "Widget",
		"metadata": map[string]any{"name": "w", "labels": map[string]any{testLabel: "yes"}},
		"spec":     map[string]any{"color": "blue"},
	}}
	w, err := dyn.Create(ctx, widget, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create widget: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); size != 3 || w.GetAnnotations()["defaulted-on"] != "CREATE" {
		t.Errorf("created widget not defaulted: size %d annotations %v", size, w.GetAnnotations())
	}
	_ = unstructured.SetNestedField(w.Object, "green", "spec", "color")
	if w, err = dyn.Update(ctx, w, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update widget: %v", err)
	}
	if w.GetAnnotations()["defaulted-on"] != "UPDATE" {
		t.Errorf("updated widget not defaulted: annotations %v", w.GetAnnotations())
	}
	if got, want := warnings.take(), []string{"widget color changed from blue to green"}; !slices.Equal(got, want) {
		t.Errorf("widget update warnings %q, want %q", got, want)
	}
	_, err = dyn.Patch(ctx, "w", types.MergePatchType, []byte(`{"spec":{"size":11}}`), metav1.PatchOptions{})
	expectStatus(t, err, http.StatusForbidden, metav1.StatusReasonForbidden, `admission webhook "vwidget.lapis.dev" denied the request: size 11 is over 10`)
	big := widget.DeepCopy()
	big.SetName("big")
	_ = unstructured.SetNestedField(big.Object, int64(12), "spec", "size")
	_, err = dyn.Create(ctx, big, metav1.CreateOptions{})
	expectStatus(t, err, http.StatusForbidden, metav1.StatusReasonForbidden, `admission webhook "vwidget.lapis.dev" denied the request: size 12 is over 10`)
}

// checkWebhookCalls: each call was made as the request's user (the admin, or whom the admin
// impersonates), with the request's options as kube-apiserver sends them.
func checkWebhookCalls(t *testing.T, ctx context.Context, ns string, labels map[string]string, seen *calls) {
	alice := rest.CopyConfig(servers.stable)
	alice.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"system:masters"}}
	if _, err := clientset(t, alice).CoreV1().ConfigMaps(ns).Create(ctx, configMap("alices", nil, labels), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create as alice: %v", err)
	}
	want := []string{
		"mutate-configmap CREATE paint admin", "validate-configmap CREATE paint admin",
		"mutate-configmap UPDATE paint admin", "validate-configmap UPDATE paint admin",
		"mutate-configmap CREATE red admin", "validate-configmap CREATE red admin",
		"mutate-configmap UPDATE paint admin", "validate-configmap UPDATE paint admin",
		"mutate-widget CREATE w admin", "validate-widget CREATE w admin",
		"mutate-widget UPDATE w admin", "validate-widget UPDATE w admin",
		"mutate-widget UPDATE w admin", "validate-widget UPDATE w admin",
		"mutate-widget CREATE big admin", "validate-widget CREATE big admin",
		"mutate-configmap CREATE alices alice", "validate-configmap CREATE alices alice",
	}
	got := slices.DeleteFunc(seen.snapshot(), func(s string) bool { return strings.Contains(s, " CREATE probe ") })
	if !slices.Equal(got, want) {
		t.Errorf("webhook calls:\n got %q\nwant %q", got, want)
	}
	// The request's options, as kube-apiserver sends them (meta.k8s.io/v1 CreateOptions and
	// UpdateOptions with the request's dryRun and fieldManager).
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for call, want := range map[string][]string{
		"mutate-configmap CREATE probe":   {`"kind":"CreateOptions"`, `"apiVersion":"meta.k8s.io/v1"`, `"dryRun":["All"]`},
		"validate-configmap UPDATE paint": {`"kind":"UpdateOptions"`, `"apiVersion":"meta.k8s.io/v1"`},
	} {
		for _, w := range want {
			if !strings.Contains(seen.options[call], w) {
				t.Errorf("%s: options %s, want %s in them", call, seen.options[call], w)
			}
		}
	}
}

// TestWebhookThroughService: a webhook configured with a `service` reference is called at an
// endpoint of the Service's EndpointSlices (a manual slice pointing at a server on this host:
// kube refuses loopback addresses in EndpointSlices, so one of the host's own), with TLS
// verified for <service>.<namespace>.svc as kube-apiserver verifies it; a Service with no
// endpoint fails the request (failurePolicy Fail) with kube's message.
func TestWebhookThroughService(t *testing.T) {
	cs := clientset(t, servers.stable)
	ns := namespace(t, cs)
	ctx := ctxFor(t, time.Minute)

	ip := hostIP(t)
	certDir, caPEM := serviceCert(t, "hook."+ns+".svc")
	port := freePort(t, ip)
	srv := webhook.NewServer(webhook.Options{Host: ip, Port: port, CertDir: certDir})
	var mu sync.Mutex
	var users []string
	srv.Register("/deny-blocked", &webhook.Admission{Handler: admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		mu.Lock()
		users = append(users, req.UserInfo.Username)
		mu.Unlock()
		var cm corev1.ConfigMap
		if err := json.Unmarshal(req.Object.Raw, &cm); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		if cm.Labels["blocked"] == "true" {
			return admission.Denied("blocked by the service's webhook")
		}
		return admission.Allowed("")
	})})
	srvCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Start(srvCtx) }()
	defer func() {
		stop()
		<-done
	}()

	// The Service and a slice of its endpoints pointing at the server.
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "nobody"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "hook-manual", Labels: map[string]string{discoveryv1.LabelServiceName: "hook"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port))}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	nsSel, objSel := testSelectors(ns)
	none := admissionregistrationv1.SideEffectClassNone
	fail := admissionregistrationv1.Fail
	hook := func(name, service, label string) admissionregistrationv1.ValidatingWebhook {
		sel := objSel.DeepCopy()
		sel.MatchLabels = map[string]string{"route": label}
		return admissionregistrationv1.ValidatingWebhook{Name: name,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: caPEM, Service: &admissionregistrationv1.ServiceReference{
				Namespace: ns, Name: service, Path: ptr.To("/deny-blocked")}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector: nsSel, ObjectSelector: sel}
	}
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "service-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{hook("hook.lapis.dev", "hook", "hook"), hook("nobody.lapis.dev", "nobody", "nobody")}}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, config, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), config.Name, metav1.DeleteOptions{})
	})

	cms := cs.CoreV1().ConfigMaps(ns)
	blocked := map[string]string{testLabel: "yes", "route": "hook", "blocked": "true"}
	poll.Eventually(t, 20*time.Second, "the service's webhook called", func() (bool, string) {
		_, err := cms.Create(ctx, configMap("probe", nil, blocked), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err), fmt.Sprint(err)
	})
	_, err := cms.Create(ctx, configMap("blocked", nil, blocked), metav1.CreateOptions{})
	expectStatus(t, err, http.StatusForbidden, metav1.StatusReasonForbidden, `admission webhook "hook.lapis.dev" denied the request: blocked by the service's webhook`)
	if _, err := cms.Create(ctx, configMap("allowed", nil, map[string]string{testLabel: "yes", "route": "hook"}), metav1.CreateOptions{}); err != nil {
		t.Errorf("a ConfigMap the service's webhook allows: %v", err)
	}
	mu.Lock()
	if len(users) == 0 || users[len(users)-1] != "admin" {
		t.Errorf("the webhook's callers: %q, want admin", users)
	}
	mu.Unlock()

	// No endpoint: the call fails, and failurePolicy Fail refuses the write as kube does.
	_, err = cms.Create(ctx, configMap("unrouted", nil, map[string]string{testLabel: "yes", "route": "nobody"}), metav1.CreateOptions{})
	expectStatus(t, err, http.StatusInternalServerError, metav1.StatusReasonInternalError,
		`Internal error occurred: failed calling webhook "nobody.lapis.dev": failed to call webhook: Post "https://nobody.`+ns+`.svc:443/deny-blocked?timeout=10s": no endpoints available for service "nobody"`)
}

// serviceCert writes a self-signed serving certificate for name as tls.crt and tls.key in a
// new directory; it returns the directory and the certificate (the webhook's CA bundle).
func serviceCert(t *testing.T, name string) (string, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, certPEM
}

// hostIP is an IPv4 address of this host that an EndpointSlice may hold (not loopback, not
// link-local); the test skips without one.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("this host has no IPv4 address an EndpointSlice may hold (only loopback or link-local)")
	return ""
}

func freePort(t *testing.T, ip string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	p, _ := strconv.Atoi(port)
	return p
}

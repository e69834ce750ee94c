package aggregator

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/discovery"
)

// extensionServer is a stand-in extension API server that records what reached it.
type extensionServer struct {
	*httptest.Server
	got chan *http.Request
}

func newExtensionServer(t *testing.T) *extensionServer {
	e := &extensionServer{got: make(chan *http.Request, 10)}
	e.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.got <- r
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"FlunderList"}`)
	}))
	t.Cleanup(e.Close)
	return e
}

// newTestAggregator is an aggregator over the Services and EndpointSlices given, on a fake
// client, routing to endpoints or not.
func newTestAggregator(t *testing.T, endpointRouting bool, objs ...runtime.Object) *Aggregator {
	t.Helper()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(objs...), 0)
	a, err := New(Config{Loopback: &rest.Config{Host: "https://127.0.0.1:6443"}, Core: factory, EndpointRouting: endpointRouting,
		Discovery: discovery.NewHandler(catalog.New()), ProxyClientCertKey: func() ([]byte, []byte) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	services, slices := factory.Core().V1().Services().Informer(), factory.Discovery().V1().EndpointSlices().Informer()
	factory.Start(t.Context().Done())
	if !cache.WaitForCacheSync(t.Context().Done(), services.HasSynced, slices.HasSynced) {
		t.Fatal("informers not synced")
	}
	return a
}

// wardle is the APIService of wardle.example.com/v1alpha1 at the Service api/wardle, port.
func wardle(port int32, available bool) *apiregistrationv1.APIService {
	status := apiregistrationv1.ConditionFalse
	if available {
		status = apiregistrationv1.ConditionTrue
	}
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.wardle.example.com"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "wardle.example.com", Version: "v1alpha1", InsecureSkipTLSVerify: true,
			Service: &apiregistrationv1.ServiceReference{Namespace: "api", Name: "wardle", Port: &port}, GroupPriorityMinimum: 2000, VersionPriority: 200},
		Status: apiregistrationv1.APIServiceStatus{Conditions: []apiregistrationv1.APIServiceCondition{{Type: apiregistrationv1.Available, Status: status}}},
	}
}

// externalName is an ExternalName Service naming host, as the aggregator reaches a server on a
// machine without nodes.
func externalName(host string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "api", Name: "wardle"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: host}}
}

func serve(a *Aggregator, path string, who user.Info) (*httptest.ResponseRecorder, bool) {
	h, ok := a.Route(strings.SplitN(path, "?", 2)[0])
	if !ok {
		return nil, false
	}
	req := httptest.NewRequest("GET", path, nil)
	req = req.WithContext(genericapirequest.WithUser(req.Context(), who))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec, true
}

// TestProxy: an available APIService's group version is proxied to its Service with the
// requesting user in kube's X-Remote-* headers; an unavailable one answers kube's 503; one
// made local or removed is no longer routed.
func TestProxy(t *testing.T) {
	backend := newExtensionServer(t)
	host, port, _ := net.SplitHostPort(backend.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	a := newTestAggregator(t, false, externalName(host))
	alice := &user.DefaultInfo{Name: "alice", UID: "u-1", Groups: []string{"devs", "system:authenticated"}, Extra: map[string][]string{"scopes": {"a", "b"}}}

	if _, ok := serve(a, "/apis/wardle.example.com/v1alpha1/flunders", alice); ok {
		t.Fatal("routed before its APIService was added")
	}
	if err := a.AddAPIService(wardle(int32(p), true)); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/apis/wardle.example.com", "/apis/wardle.example.com/v1beta1", "/apis/apps/v1"} {
		if _, ok := a.Route(path); ok {
			t.Errorf("%s routed to the extension server", path)
		}
	}
	rec, ok := serve(a, "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders?limit=5", alice)
	if !ok || rec.Code != http.StatusOK || rec.Body.String() != `{"kind":"FlunderList"}` {
		t.Fatalf("proxied: routed %v, %v", ok, rec)
	}
	got := <-backend.got
	// X-Remote-Uid: kube's RemoteRequestHeaderUID gate is on by default since 1.33.
	want := map[string][]string{"X-Remote-User": {"alice"}, "X-Remote-Uid": {"u-1"}, "X-Remote-Group": {"devs", "system:authenticated"},
		"X-Remote-Extra-Scopes": {"a", "b"}}
	for k, v := range want {
		if g := got.Header.Values(k); strings.Join(g, ",") != strings.Join(v, ",") {
			t.Errorf("%s: %q, want %q", k, g, v)
		}
	}
	if got.URL.Path != "/apis/wardle.example.com/v1alpha1/namespaces/ns/flunders" || got.URL.RawQuery != "limit=5" {
		t.Errorf("the extension server was asked for %s", got.URL)
	}

	if err := a.AddAPIService(wardle(int32(p), false)); err != nil {
		t.Fatal(err)
	}
	if rec, _ := serve(a, "/apis/wardle.example.com/v1alpha1/flunders", alice); rec.Code != http.StatusServiceUnavailable || rec.Body.String() != "service unavailable\n" {
		t.Errorf("unavailable: %d %q, want kube's 503 \"service unavailable\"", rec.Code, rec.Body)
	}
	local := wardle(0, true)
	local.Spec.Service = nil
	if err := a.AddAPIService(local); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Route("/apis/wardle.example.com/v1alpha1/flunders"); ok {
		t.Error("a local APIService's group version is still proxied")
	}
	_ = a.AddAPIService(wardle(int32(p), true))
	a.RemoveAPIService("v1alpha1.wardle.example.com")
	if _, ok := a.Route("/apis/wardle.example.com/v1alpha1/flunders"); ok {
		t.Error("a removed APIService's group version is still proxied")
	}
}

// TestEndpointRouting: with --enable-aggregator-routing, an APIService's Service is reached at
// one of its EndpointSlices' ready endpoints rather than at its cluster IP (which nothing
// routes on a machine without nodes).
func TestEndpointRouting(t *testing.T) {
	backend := newExtensionServer(t)
	host, port, _ := net.SplitHostPort(backend.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "api", Name: "wardle"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.0.0.10",
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(p))}}}}
	ready := true
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "api", Name: "wardle-1",
		Labels: map[string]string{discoveryv1.LabelServiceName: "wardle"}}, AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:     []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(p))}}}
	a := newTestAggregator(t, true, svc, slice)
	if err := a.AddAPIService(wardle(443, true)); err != nil {
		t.Fatal(err)
	}
	rec, _ := serve(a, "/apis/wardle.example.com/v1alpha1/flunders", &user.DefaultInfo{Name: "alice"})
	if rec.Code != http.StatusOK {
		t.Fatalf("through the endpoint: %d %s", rec.Code, rec.Body)
	}
	<-backend.got
}

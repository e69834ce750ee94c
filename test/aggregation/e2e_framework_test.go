package aggregation

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/lapis-dev/lapis/internal/testkit/samplereference"
)

// e2eFramework is what the copied spec uses of the e2e framework's Framework: the clients, the
// test's namespace, and here the sample-apiserver process that stands for the Deployment.
type e2eFramework struct {
	ClientSet     clientset.Interface
	DynamicClient dynamic.Interface
	Namespace     *v1.Namespace

	t      *testing.T
	target *target
	sample *samplereference.Server
}

// newE2EFramework creates namespace (the framework names it aggregator-NNNNN), with its default
// ServiceAccount (made by kube-controller-manager under the framework; made here where no
// controller makes it), deleted when t ends.
func newE2EFramework(t *testing.T, s *target, namespace string) *e2eFramework {
	ctx := t.Context()
	f := &e2eFramework{ClientSet: s.client, DynamicClient: s.dynamic, t: t, target: s}
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	var err error
	if f.Namespace, err = s.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("%s: creating namespace: %v", s.name, err)
	}
	t.Cleanup(func() {
		_ = s.client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	if err := ensureDefaultServiceAccount(ctx, s, ns.Name); err != nil {
		t.Fatal(err)
	}
	return f
}

// ensureDefaultServiceAccount creates namespace's default ServiceAccount unless a controller
// has already.
func ensureDefaultServiceAccount(ctx context.Context, s *target, namespace string) error {
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	_, err := s.client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("%s: the default ServiceAccount of %s: %w", s.name, namespace, err)
	}
	return nil
}

// startSampleAPIServer runs the spec's Deployment as a process: the sample-apiserver on port
// with cert, as the namespace's default ServiceAccount, its etcd beside it.
func (f *e2eFramework) startSampleAPIServer(ctx context.Context, port int, cert samplereference.ServingCertificate) error {
	ns := f.Namespace.Name
	dir := f.target.sampleDir(ns)
	s, err := startSample(ctx, f.target, dir, ns, port, cert)
	f.sample = s
	return err
}

// stopSampleAPIServer stops the process, when there is one.
func (f *e2eFramework) stopSampleAPIServer() {
	if f.sample != nil {
		if err := f.sample.Stop(); err != nil {
			f.t.Errorf("%s: stopping the sample-apiserver: %v", f.target.name, err)
		}
		f.sample = nil
	}
}

// sampleLog is the end of the sample-apiserver's log, for debug output.
func (f *e2eFramework) sampleLog() string {
	if f.sample == nil {
		return "(not running)"
	}
	return f.sample.LogTail()
}

func (f *e2eFramework) shims() e2eShims { return e2eShims{t: f.t, server: f.target.name} }

// e2eShims stand for the e2e framework's and ginkgo's functions the spec calls, so that its
// lines read as they do upstream; failures name the server.
type e2eShims struct {
	t      *testing.T
	server string
}

// ExpectNoError is framework.ExpectNoError: explain is a format and its arguments.
func (e e2eShims) ExpectNoError(err error, explain ...any) {
	e.t.Helper()
	if err == nil {
		return
	}
	msg := "unexpected error"
	if len(explain) > 0 {
		if format, ok := explain[0].(string); ok {
			msg = fmt.Sprintf(format, explain[1:]...)
		}
	}
	e.t.Fatalf("%s: %s: %v", e.server, msg, err)
}

func (e e2eShims) Failf(format string, args ...any) {
	e.t.Helper()
	e.t.Fatalf("%s: %s", e.server, fmt.Sprintf(format, args...))
}

func (e e2eShims) Logf(format string, args ...any) {
	e.t.Helper()
	e.t.Logf("%s: %s", e.server, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

// By is ginkgo.By.
func (e e2eShims) By(text string) { e.t.Helper(); e.t.Logf("%s: STEP: %s", e.server, text) }

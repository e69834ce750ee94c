package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// builtinTarget returns a client of the server the benchmarks measure (see targetEnv).
func builtinTarget(b testing.TB) (*rest.Config, kubernetes.Interface) {
	b.Helper()
	setup(b)
	target.once.Do(func() { target.cs, target.err = kubernetes.NewForConfig(lapis.cfg) })
	if target.err != nil {
		b.Fatalf("connecting to the server under test: %v", target.err)
	}
	return lapis.cfg, target.cs
}

var target struct {
	once sync.Once
	err  error
	cs   kubernetes.Interface
}

// deployment is a Deployment as an application chart writes one: two containers with ports,
// environment, resources and probes; gen varies the image.
func deployment(ns, name string, gen int) *appsv1.Deployment {
	labels := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/instance": "bench"}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}}
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:           "app",
					Image:          fmt.Sprintf("registry.example.com/app:1.%d", gen),
					Args:           []string{"--listen=:8080", "--log-level=info", fmt.Sprintf("--gen=%d", gen)},
					Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "metrics", ContainerPort: 9090}},
					Env:            []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "REGION", Value: "eu-1"}},
					Resources:      res,
					LivenessProbe:  probe,
					ReadinessProbe: probe,
				}, {
					Name:      "proxy",
					Image:     "registry.example.com/proxy:2.4",
					Ports:     []corev1.ContainerPort{{Name: "https", ContainerPort: 8443}},
					Resources: res,
				}}},
			},
		},
	}
}

// scaler is the second manager's configuration of a Deployment, as an autoscaler applies it:
// spec.replicas alone.
func scaler(ns, name string, gen int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":%q,"namespace":%q},"spec":{"replicas":%d}}`,
		name, ns, gen%7+3)
}

// chart is the chart's manager's configuration: the whole Deployment.
func chart(ns, name string, gen int) []byte {
	b, err := json.Marshal(deployment(ns, name, gen))
	if err != nil {
		panic(err) // a Deployment always marshals
	}
	return b
}

// apply force-applies the configuration body (JSON, as kubectl and client-go's Apply send it)
// of Deployment ns/name as manager.
func apply(ctx context.Context, cs kubernetes.Interface, ns, name string, body []byte, manager string) error {
	return cs.AppsV1().RESTClient().Patch("application/apply-patch+yaml").
		Namespace(ns).Resource("deployments").Name(name).
		Param("fieldManager", manager).Param("force", "true").
		Body(body).Do(ctx).Error()
}

// BenchmarkDeploymentApply: C concurrent clients force-apply Deployments, each client to its own
// objects, alternating two field managers that both own spec.replicas (a chart's manager and an
// autoscaler's) and changing the image each time the chart's manager applies. One iteration is
// one apply to every object; applies/s and per-apply latency are reported.
func BenchmarkDeploymentApply(b *testing.B) {
	clients, perClient := 16, 4
	if small() {
		clients, perClient = 2, 1
	}
	b.Run(fmt.Sprintf("clients-%d", clients), func(b *testing.B) { benchDeploymentApply(b, clients, perClient) })
}

var deploymentApplySeeds sync.Map // objects -> *listSeed

func benchDeploymentApply(b *testing.B, clients, perClient int) {
	_, cs := builtinTarget(b)
	ctx := context.Background()
	objects := clients * perClient
	v, _ := deploymentApplySeeds.LoadOrStore(objects, &listSeed{})
	seed := v.(*listSeed)
	seed.once.Do(func() {
		seed.ns = fmt.Sprintf("bench-deploy-ssa-%d", objects)
		if seed.err = ensureNS(ctx, cs, seed.ns); seed.err != nil {
			return
		}
		seed.err = parallel(objects, clients, func(i int) error {
			name := fmt.Sprintf("d-%04d", i)
			if err := apply(ctx, cs, seed.ns, name, chart(seed.ns, name, 0), "bench-chart"); err != nil {
				return err
			}
			return apply(ctx, cs, seed.ns, name, scaler(seed.ns, name, 0), "bench-scaler")
		})
	})
	if seed.err != nil {
		b.Fatalf("seeding: %v", seed.err)
	}

	lat := make([][]time.Duration, clients)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var (
			wg    sync.WaitGroup
			errMu sync.Mutex
			first error
		)
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < perClient; j++ {
					o := c*perClient + j
					name := fmt.Sprintf("d-%04d", o)
					g := int(applyGen.Add(1)) // new content every time
					body, manager := chart(seed.ns, name, g), "bench-chart"
					if (i+o)%2 == 1 {
						body, manager = scaler(seed.ns, name, g), "bench-scaler"
					}
					t := time.Now()
					err := apply(ctx, cs, seed.ns, name, body, manager)
					lat[c] = append(lat[c], time.Since(t))
					if err != nil {
						errMu.Lock()
						if first == nil {
							first = fmt.Errorf("apply %s as %s: %w", name, manager, err)
						}
						errMu.Unlock()
						return
					}
				}
			}()
		}
		wg.Wait()
		if first != nil {
			b.Fatal(first)
		}
	}
	b.StopTimer()
	reportApplies(b, lat)
}

// BenchmarkDeploymentList lists N Deployments of one namespace (created once, untimed) in one
// request, no limit, reading the response's bytes without decoding them: the server's share of
// a full list, as JSON (kubectl's) and as Protobuf (controllers').
func BenchmarkDeploymentList(b *testing.B) {
	n := 2000
	if small() {
		n = 20
	}
	b.Run(strconv.Itoa(n), func(b *testing.B) {
		_, cs := builtinTarget(b)
		ns := seedDeployments(b, cs, n)
		b.Run("json-raw", func(b *testing.B) { benchRawDeploymentList(b, ns, n, "application/json") })
		b.Run("protobuf-raw", func(b *testing.B) {
			benchRawDeploymentList(b, ns, n, "application/vnd.kubernetes.protobuf")
		})
	})
}

var deploymentListSeeds sync.Map // int -> *listSeed

func seedDeployments(b *testing.B, cs kubernetes.Interface, n int) string {
	b.Helper()
	v, _ := deploymentListSeeds.LoadOrStore(n, &listSeed{})
	s := v.(*listSeed)
	s.once.Do(func() {
		ctx := context.Background()
		s.ns = fmt.Sprintf("bench-deploy-list-%d", n)
		if s.err = ensureNS(ctx, cs, s.ns); s.err != nil {
			return
		}
		start := time.Now()
		s.err = parallel(n, createConcurrency, func(i int) error {
			_, err := cs.AppsV1().Deployments(s.ns).Create(ctx, deployment(s.ns, fmt.Sprintf("d-%06d", i), i), metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil // seeded by an earlier run against the same server
			}
			return err
		})
		if s.err == nil {
			b.Logf("created %d Deployments in %v (%.0f/s, %d clients)", n, time.Since(start).Round(time.Millisecond),
				float64(n)/time.Since(start).Seconds(), createConcurrency)
		}
	})
	if s.err != nil {
		b.Fatalf("seeding %d Deployments: %v", n, s.err)
	}
	return s.ns
}

func benchRawDeploymentList(b *testing.B, ns string, want int, accept string) {
	cfg, cs := builtinTarget(b)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		b.Fatal(err)
	}
	url := cfg.Host + "/apis/apps/v1/namespaces/" + ns + "/deployments"
	// get reads the whole body into one reused buffer: the client's share stays the transport's.
	buf := make([]byte, 32<<10)
	get := func() (int, error) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Accept", accept)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			return 0, fmt.Errorf("%s: %s", resp.Status, body)
		}
		if resp.Header.Get("Content-Type") != accept {
			return 0, fmt.Errorf("answered %s, want %s", resp.Header.Get("Content-Type"), accept)
		}
		size := 0
		for {
			n, err := resp.Body.Read(buf)
			size += n
			if err == io.EOF {
				return size, nil
			}
			if err != nil {
				return size, err
			}
		}
	}
	// Check once, untimed, that the list is complete.
	if l, err := cs.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{}); err != nil || len(l.Items) != want {
		b.Fatalf("listed %v objects (%v), want %d", lenOf(l), err, want)
	}
	size := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n, err := get()
		if err != nil {
			b.Fatal(err)
		}
		size = n
	}
	b.StopTimer()
	b.ReportMetric(float64(want), "objects/op")
	b.ReportMetric(float64(want)*float64(b.N)/b.Elapsed().Seconds(), "objects/s")
	b.ReportMetric(float64(size)/1e6, "MB/op")
}

func lenOf(l *appsv1.DeploymentList) int {
	if l == nil {
		return 0
	}
	return len(l.Items)
}

// ensureNS creates namespace name unless it exists.
func ensureNS(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

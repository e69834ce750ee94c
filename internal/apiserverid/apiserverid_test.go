package apiserverid

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestName(t *testing.T) {
	a, b := Name("host", "10.0.0.1:6443"), Name("host", "10.0.0.1:6444")
	if a == b || a != Name("host", "10.0.0.1:6443") || a == Name("other", "10.0.0.1:6443") {
		t.Errorf("names not one per host and address: %s %s", a, b)
	}
	if !strings.HasPrefix(a, "apiserver-") || len(a) != len("apiserver-")+26 || strings.ToLower(a) != a {
		t.Errorf("name %q: want apiserver- and 26 lower-case base32 characters, as kube's", a)
	}
}

func newLease(name string, labelled bool, addr string, renewed time.Duration, duration int32) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To(duration)}}
	if labelled {
		l.Labels = map[string]string{IdentityLabel: Component}
	}
	if addr != "" {
		l.Annotations = map[string]string{AddressAnnotation: addr}
	}
	if renewed >= 0 {
		l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now().Add(-renewed)))
	}
	return l
}

func TestLive(t *testing.T) {
	tests := []struct {
		name   string
		leases []*coordinationv1.Lease
		want   []string
	}{
		{"none", nil, nil},
		{"renewed within the TTL, sorted", []*coordinationv1.Lease{
			newLease("b", true, "10.0.0.2:6443", time.Second, 3600),
			newLease("a", true, "10.0.0.1:6443", 14*time.Second, 3600),
		}, []string{"10.0.0.1:6443", "10.0.0.2:6443"}},
		{"renewed too long ago: a dead replica, though its Lease lasts an hour", []*coordinationv1.Lease{
			newLease("a", true, "10.0.0.1:6443", 16*time.Second, 3600),
			newLease("b", true, "10.0.0.2:6443", 0, 3600),
		}, []string{"10.0.0.2:6443"}},
		{"never renewed, or no address", []*coordinationv1.Lease{
			newLease("a", true, "10.0.0.1:6443", -1, 3600),
			newLease("b", true, "", 0, 3600),
		}, nil},
		{"not an identity Lease", []*coordinationv1.Lease{
			newLease("kube-controller-manager", false, "10.0.0.1:6443", 0, 15),
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			for _, l := range tc.leases {
				if _, err := client.CoordinationV1().Leases(Namespace).Create(t.Context(), l, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := Live(t.Context(), client)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Live = %v; want %v", got, tc.want)
			}
		})
	}
}

func TestRun(t *testing.T) {
	client := fake.NewClientset()
	id := New(client, "10.0.0.1:6443")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go id.Run(ctx)
	var l *coordinationv1.Lease
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if l, err = client.CoordinationV1().Leases(Namespace).Get(ctx, id.LeaseName(), metav1.GetOptions{}); err == nil {
			break
		}
	}
	if l == nil {
		t.Fatal("no identity Lease")
	}
	if l.Labels[IdentityLabel] != Component || l.Labels["kubernetes.io/hostname"] == "" || l.Annotations[AddressAnnotation] != "10.0.0.1:6443" {
		t.Errorf("labels %v, annotations %v", l.Labels, l.Annotations)
	}
	if !strings.HasPrefix(*l.Spec.HolderIdentity, id.LeaseName()+"_") || *l.Spec.LeaseDurationSeconds != 3600 {
		t.Errorf("spec %+v", l.Spec)
	}
	if got, _ := Live(ctx, client); !slices.Equal(got, []string{"10.0.0.1:6443"}) {
		t.Errorf("Live = %v", got)
	}
	cancel()
	time.Sleep(50 * time.Millisecond)
	for range 2 { // gone, and gone again
		if err := id.Remove(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := Live(t.Context(), client); len(got) != 0 {
		t.Errorf("Live after Remove = %v", got)
	}
}

func TestGC(t *testing.T) {
	client := fake.NewClientset(
		newLease("expired", true, "10.0.0.1:6443", 2*time.Hour, 3600),
		newLease("live", true, "10.0.0.2:6443", time.Minute, 3600),
		newLease("other-expired", false, "", 2*time.Hour, 15),
	)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go RunGC(ctx, client, 50*time.Millisecond)
	want := []string{"live", "other-expired"}
	var got []string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		list, err := client.CoordinationV1().Leases(Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, l := range list.Items {
			got = append(got, l.Name)
		}
		slices.Sort(got)
		if slices.Equal(got, want) {
			return
		}
	}
	t.Errorf("Leases left %v; want %v", got, want)
}

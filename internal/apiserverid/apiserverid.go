package apiserverid

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-helpers/apimachinery/lease"
	"k8s.io/kubernetes/pkg/controlplane/controller/apiserverleasegc"
	"k8s.io/utils/clock"
)

// kube-apiserver's values (pkg/controlplane/apiserver/server.go, reconcilers).
const (
	Namespace         = metav1.NamespaceSystem
	IdentityLabel     = "apiserver.kubernetes.io/identity"
	Component         = "kube-apiserver"
	LeaseDuration     = 3600 * time.Second
	RenewInterval     = 10 * time.Second
	GCPeriod          = 3600 * time.Second
	LiveTTL           = 15 * time.Second // the lease endpoint reconciler's master lease TTL
	AddressAnnotation = corev1.AnnotationPeerAdvertiseAddress
)

// Selector selects kube-apiserver identity Leases.
const Selector = IdentityLabel + "=" + Component

// Name is the identity Lease of the API server on host advertised at address (host:port):
// "apiserver-" and a hash, as kube's.
func Name(host, address string) string {
	h := sha256.New()
	for _, part := range []string{host, Component, address} {
		// Length-prefixed, so that no two lists of parts hash alike.
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	sum := h.Sum(nil)
	return "apiserver-" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
}

// Identity is one replica's identity Lease.
type Identity struct {
	client  kubernetes.Interface
	name    string
	address string
	host    string
	clock   clock.Clock
}

// New is the identity of the replica advertised at address (host:port), kept through client.
func New(client kubernetes.Interface, address string) *Identity {
	host, err := os.Hostname()
	if err != nil {
		host = ""
	}
	return &Identity{client: client, name: Name(host, address), address: address, host: host, clock: clock.RealClock{}}
}

// LeaseName is the name of this replica's Lease.
func (id *Identity) LeaseName() string { return id.name }

// Run keeps the Lease until ctx ends, with kube's lease controller.
func (id *Identity) Run(ctx context.Context) {
	holder := id.name + "_" + string(uuid.NewUUID())
	lease.NewController(id.clock, id.client, holder, int32(LeaseDuration/time.Second), nil, RenewInterval,
		id.name, Namespace, id.label).Run(ctx)
}

// label is kube's labelAPIServerHeartbeatFunc, with the address always.
func (id *Identity) label(l *coordinationv1.Lease) error {
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Labels[IdentityLabel] = Component
	if id.host != "" {
		l.Labels[corev1.LabelHostname] = id.host
	}
	l.Annotations[AddressAnnotation] = id.address
	return nil
}

// RunGC deletes expired identity Leases every GCPeriod until ctx ends, with kube's
// apiserverleasegc controller.
func RunGC(ctx context.Context, client kubernetes.Interface, period time.Duration) {
	apiserverleasegc.NewAPIServerLeaseGC(client, period, Namespace, Selector).RunWithContext(ctx)
}

// Live is the addresses (host:port, sorted) of the API servers whose identity Lease was renewed
// within LiveTTL, read through client.
func Live(ctx context.Context, client kubernetes.Interface) ([]string, error) {
	leases, err := client.CoordinationV1().Leases(Namespace).List(ctx, metav1.ListOptions{LabelSelector: Selector})
	if err != nil {
		return nil, err
	}
	return live(leases.Items, time.Now()), nil
}

func live(leases []coordinationv1.Lease, now time.Time) []string {
	var out []string
	for _, l := range leases {
		addr := l.Annotations[AddressAnnotation]
		if addr == "" || l.Spec.RenewTime == nil || now.Sub(l.Spec.RenewTime.Time) > LiveTTL {
			continue
		}
		out = append(out, addr)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Remove deletes this replica's Lease (once Run has returned), so that it stops counting as
// live at once: kube-apiserver's lease reconciler deletes its master lease so on a graceful
// stop.
func (id *Identity) Remove(ctx context.Context) error {
	err := id.client.CoordinationV1().Leases(Namespace).Delete(ctx, id.name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

package rootca

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"maps"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/controllers/controllertest"
	"github.com/lapis-dev/lapis/internal/objects"
	"github.com/lapis-dev/lapis/internal/objects/objectstest"
	"github.com/lapis-dev/lapis/internal/pki"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// lapisCA is the CA of a fresh lapis data directory.
func lapisCA(t *testing.T) string {
	t.Helper()
	creds, err := pki.LoadOrCreate(t.TempDir(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return string(creds.CAPEM)
}

// selfSigned is a self-signed certificate named cn, valid until notAfter.
func selfSigned(t *testing.T, cn string, isCA bool, notAfter time.Time) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter, IsCA: isCA, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// ders lists the certificates of a PEM bundle, sorted.
func ders(bundle string) []string {
	var out []string
	for _, c := range certificates([]byte(bundle)) {
		out = append(out, string(c.Raw))
	}
	slices.Sort(out)
	return out
}

func TestWanted(t *testing.T) {
	ours, peer, otherPeer := lapisCA(t), lapisCA(t), lapisCA(t)
	later := time.Now().Add(time.Hour)
	foreignCA := selfSigned(t, "someone-else", true, later)
	expiredPeer := selfSigned(t, "lapis-ca", true, time.Now().Add(-time.Hour))
	leafNamedLikeCA := selfSigned(t, "lapis-ca", false, later)
	c := NewController(nil, []byte(ours), discard)
	tests := []struct {
		name, current string
		want          []string // the bundle's certificates; ours alone must be ours verbatim
	}{
		{"nothing published", "", []string{ours}},
		{"ours", ours, []string{ours}},
		{"not PEM", "hello", []string{ours}},
		{"ours with text around", "# note\n" + ours + "trailing", []string{ours}},
		{"another CA replaced", foreignCA, []string{ours}},
		{"another CA next to ours dropped", ours + foreignCA, []string{ours}},
		{"an expired lapis CA dropped", expiredPeer + ours, []string{ours}},
		{"a certificate that is not a CA dropped", leafNamedLikeCA, []string{ours}},
		{"another lapis's CA kept, ours added", peer, []string{ours, peer}},
		{"another lapis's CA kept, in either order", ours + peer, []string{ours, peer}},
		{"several lapis CAs kept, foreign ones dropped", otherPeer + foreignCA + peer + ours + peer, []string{ours, peer, otherPeer}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.wanted(tt.current, time.Now())
			if len(tt.want) == 1 {
				if got != tt.want[0] {
					t.Errorf("got %q, want exactly our CA", got)
				}
				return
			}
			if !slices.Equal(ders(got), ders(strings.Join(tt.want, ""))) {
				t.Errorf("got %d certificates, want %d", len(ders(got)), len(tt.want))
			}
			// The other lapis computes the same bundle from it: neither rewrites it.
			other := NewController(nil, []byte(peer), discard)
			if again := other.wanted(got, time.Now()); again != got {
				t.Errorf("the other lapis wants %q, not %q", again, got)
			}
			if again := c.wanted(got, time.Now()); again != got {
				t.Errorf("not stable: %q after %q", again, got)
			}
		})
	}
}

// publisher is a running root CA publisher over a fresh objects service, and what its tests ask
// of the ConfigMaps it writes.
type publisher struct {
	ctx context.Context
	svc *objects.Service
	cms *catalog.Resource
	ca  string
}

func newPublisher(t *testing.T) *publisher {
	svc, cat := objectstest.NewService(t, "before")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ca := lapisCA(t)
	go NewController(svc, []byte(ca), discard).Run(ctx)
	cms, _ := cat.Lookup(catalog.ConfigMapsGVR)
	return &publisher{ctx: ctx, svc: svc, cms: cms, ca: ca}
}

func (p *publisher) get(ns string) (*unstructured.Unstructured, error) {
	return p.svc.Get(p.ctx, p.cms, ns, ConfigMapName)
}

func (p *publisher) published(cm *unstructured.Unstructured) bool {
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	return maps.Equal(data, map[string]string{"ca.crt": p.ca}) && cm.GetAnnotations()[DescriptionAnnotation] == Description
}

// created waits for the ConfigMap in ns as kube publishes it.
func (p *publisher) created(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	var cm *unstructured.Unstructured
	controllertest.Eventually(t, "kube-root-ca.crt in "+ns, func() bool {
		var err error
		cm, err = p.get(ns)
		return err == nil && p.published(cm)
	})
	return cm
}

func (p *publisher) newNamespace(t *testing.T, name string) {
	controllertest.CreateNamespace(p.ctx, t, p.svc, name)
}

func (p *publisher) change(t *testing.T, ns string, mutate func(cm *unstructured.Unstructured)) *unstructured.Unstructured {
	t.Helper()
	res, err := p.svc.Update(p.ctx, p.cms, ns, ConfigMapName, func(cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		mutate(cur)
		return cur, nil
	}, objects.WriteOptions{Manager: "kubectl-edit"})
	if err != nil {
		t.Fatal(err)
	}
	return res.Object
}

// restored changes the ConfigMap, then waits for a newer version that is published again.
func (p *publisher) restored(name string, mutate func(cm *unstructured.Unstructured)) func(t *testing.T) {
	return func(t *testing.T) {
		p.newNamespace(t, name)
		p.created(t, name)
		changed := p.change(t, name, mutate)
		controllertest.Eventually(t, "published again", func() bool {
			cm, err := p.get(name)
			return err == nil && p.published(cm) && cm.GetResourceVersion() != changed.GetResourceVersion()
		})
	}
}

func TestPublisher(t *testing.T) {
	p := newPublisher(t)
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"a namespace that existed before the controller started gets it", func(t *testing.T) { p.created(t, "before") }},
		{"a new namespace gets it, written by kube-controller-manager", p.writtenByKubeControllerManager},
		{"deleted, it comes back", p.comesBack},
		{"changed data is put back", p.restored("changed", func(cm *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(cm.Object, "not a CA", "data", "ca.crt")
		})},
		{"an added key is removed", p.restored("added", func(cm *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(cm.Object, "x", "data", "extra")
		})},
		{"the removed data is put back", p.restored("emptied", func(cm *unstructured.Unstructured) {
			unstructured.RemoveNestedField(cm.Object, "data")
		})},
		{"a removed annotation is put back", p.restored("unannotated", func(cm *unstructured.Unstructured) {
			cm.SetAnnotations(map[string]string{"other": "kept"})
		})},
		{"a changed but non-empty description is left, as kube leaves it", p.descriptionLeft},
		{"a Terminating namespace gets none", func(t *testing.T) {
			controllertest.NoneInTerminatingNamespace(p.ctx, t, p.svc, p.cms, ConfigMapName, p.created)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func (p *publisher) writtenByKubeControllerManager(t *testing.T) {
	p.newNamespace(t, "fresh")
	cm := p.created(t, "fresh")
	if got := slices.Sorted(maps.Keys(cm.GetAnnotations())); !slices.Equal(got, []string{DescriptionAnnotation}) {
		t.Errorf("annotations %v", got)
	}
	mf := cm.GetManagedFields()
	if len(mf) != 1 || mf[0].Manager != "kube-controller-manager" || mf[0].Operation != "Update" {
		t.Errorf("managedFields %+v, want one Update by kube-controller-manager", mf)
	}
}

func (p *publisher) comesBack(t *testing.T) {
	p.newNamespace(t, "again")
	first := p.created(t, "again")
	if _, err := p.svc.Delete(p.ctx, p.cms, "again", ConfigMapName, objects.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	controllertest.Eventually(t, "a new kube-root-ca.crt", func() bool {
		cm, err := p.get("again")
		return err == nil && p.published(cm) && cm.GetUID() != first.GetUID()
	})
}

func (p *publisher) descriptionLeft(t *testing.T) {
	p.newNamespace(t, "described")
	p.created(t, "described")
	changed := p.change(t, "described", func(cm *unstructured.Unstructured) {
		cm.SetAnnotations(map[string]string{DescriptionAnnotation: "mine"})
	})
	// A later change of the data makes the publisher write the description too.
	time.Sleep(300 * time.Millisecond)
	cm, err := p.get("described")
	if err != nil || cm.GetResourceVersion() != changed.GetResourceVersion() {
		t.Fatalf("%v, %v: the description was rewritten", cm, err)
	}
	p.change(t, "described", func(cm *unstructured.Unstructured) { cm.Object["data"] = map[string]any{} })
	p.created(t, "described")
}

// TestSharedStorage: two lapis with different CAs on one storage agree on one bundle with both
// CAs, and then stop writing.
func TestSharedStorage(t *testing.T) {
	svc, cat := objectstest.NewService(t, "shared")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := lapisCA(t), lapisCA(t)
	go NewController(svc, []byte(a), discard).Run(ctx)
	go NewController(svc, []byte(b), discard).Run(ctx)
	cms, _ := cat.Lookup(catalog.ConfigMapsGVR)

	var rv string
	controllertest.Eventually(t, "both CAs published", func() bool {
		cm, err := svc.Get(ctx, cms, "shared", ConfigMapName)
		if err != nil {
			return false
		}
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		rv = cm.GetResourceVersion()
		return slices.Equal(ders(data["ca.crt"]), ders(a+b))
	})
	time.Sleep(500 * time.Millisecond)
	cm, err := svc.Get(ctx, cms, "shared", ConfigMapName)
	if err != nil || cm.GetResourceVersion() != rv {
		t.Errorf("still rewritten: %v, %v", cm, err)
	}
}

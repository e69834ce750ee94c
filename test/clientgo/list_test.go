package clientgo

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// TestConsistentPagedList: a list in pages of 2 while another goroutine creates, updates and
// deletes objects between pages: every page is at the first page's resourceVersion, and the
// pages together are exactly the objects as they were then, in key order.
func TestConsistentPagedList(t *testing.T) {
	t.Parallel()
	c := newCMClient(t, servers.stable)
	// kube-root-ca.crt sorts first.
	root, err := c.cs.CoreV1().ConfigMaps(c.ns).Get(c.ctx, rootCA, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	snapshot := []cmState{stateOf([]*corev1.ConfigMap{root})[key(c.ns, rootCA)]}
	names := []string{rootCA}
	for i := range 9 {
		cm := c.create(fmt.Sprintf("p-%d", i), nil)
		snapshot = append(snapshot, cmState{RV: cm.ResourceVersion, Data: cm.Data, Labels: map[string]string{}})
		names = append(names, cm.Name)
	}

	step := make(chan int)
	stepped := make(chan struct{})
	go func() {
		defer close(stepped)
		for i := range step {
			// Between pages: a new object sorting into a later page, an update and a deletion of
			// objects not listed yet.
			if _, err := c.cs.CoreV1().ConfigMaps(c.ns).Create(c.ctx, configMap(fmt.Sprintf("p-%da", 2*i+2), map[string]string{"k": "new"}, nil), metav1.CreateOptions{}); err != nil {
				t.Errorf("create: %v", err)
			}
			if _, err := c.cs.CoreV1().ConfigMaps(c.ns).Update(c.ctx, configMap(fmt.Sprintf("p-%d", 2*i+3), map[string]string{"k": "changed"}, nil), metav1.UpdateOptions{}); err != nil {
				t.Errorf("update: %v", err)
			}
			if err := c.cs.CoreV1().ConfigMaps(c.ns).Delete(c.ctx, fmt.Sprintf("p-%d", 2*i+4), metav1.DeleteOptions{}); err != nil {
				t.Errorf("delete: %v", err)
			}
			stepped <- struct{}{}
		}
	}()

	var got []cmState
	var gotNames []string
	var rv, cont string
	for page := 0; ; page++ {
		list, err := c.cs.CoreV1().ConfigMaps(c.ns).List(c.ctx, metav1.ListOptions{Limit: 2, Continue: cont})
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if page == 0 {
			rv = list.ResourceVersion
			if list.RemainingItemCount == nil || *list.RemainingItemCount != 8 {
				t.Errorf("first page remainingItemCount %v, want 8", list.RemainingItemCount)
			}
		} else if list.ResourceVersion != rv {
			t.Errorf("page %d at resourceVersion %s, want the first page's %s", page, list.ResourceVersion, rv)
		}
		if len(list.Items) != 2 && list.Continue != "" {
			t.Errorf("page %d has %d items and a continue token", page, len(list.Items))
		}
		for i := range list.Items {
			cm := &list.Items[i]
			gotNames = append(gotNames, cm.Name)
			got = append(got, stateOf([]*corev1.ConfigMap{cm})[key(c.ns, cm.Name)])
		}
		if list.Continue == "" {
			break
		}
		if page > 10 {
			t.Fatal("too many pages")
		}
		cont = list.Continue
		if page < 3 {
			step <- page
			<-stepped
		}
	}
	close(step)
	if !reflect.DeepEqual(gotNames, names) || !reflect.DeepEqual(got, snapshot) {
		t.Errorf("paged list:\n got %v %v\nwant %v %v (the objects at resourceVersion %s)", gotNames, got, names, snapshot, rv)
	}
	// The changes did happen, after the snapshot.
	now, err := c.cs.CoreV1().ConfigMaps(c.ns).List(c.ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(now.Items) != 10 || now.Items[4].Name != "p-2a" || now.Items[5].Data["k"] != "changed" {
		t.Errorf("concurrent changes not visible in a fresh list: %d items", len(now.Items))
	}
}

// encodeToken builds a continue token the way kube-apiserver encodes them.
func encodeToken(rv int64, start string) string {
	b, _ := json.Marshal(map[string]any{"v": "meta.k8s.io/v1", "rv": rv, "start": start})
	return base64.RawURLEncoding.EncodeToString(b)
}

// TestListOptionErrors: invalid list options and continue tokens fail as in kube-apiserver
// (messages as it words them).
func TestListOptionErrors(t *testing.T) {
	t.Parallel()
	c := newCMClient(t, servers.stable)
	for i := range 3 {
		c.create(fmt.Sprintf("e-%d", i), nil)
	}
	cms := c.cs.CoreV1().ConfigMaps(c.ns)
	first, err := cms.List(c.ctx, metav1.ListOptions{Limit: 2})
	if err != nil || first.Continue == "" {
		t.Fatalf("first page: %v, continue %q", err, first.Continue)
	}
	invalid := func(cause string) string {
		return `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: ` + cause
	}
	for _, tc := range []struct {
		name    string
		opts    metav1.ListOptions
		code    int32
		reason  metav1.StatusReason
		message string
	}{
		{"match without resourceVersion", metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			422, metav1.StatusReasonInvalid, invalid("Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided")},
		{"exact at 0", metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			422, metav1.StatusReasonInvalid, invalid(`Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"`)},
		{"unknown match", metav1.ListOptions{ResourceVersion: "1", ResourceVersionMatch: "Newest"},
			422, metav1.StatusReasonInvalid, invalid(`Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""`)},
		{"continue with match", metav1.ListOptions{Limit: 2, Continue: first.Continue, ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			422, metav1.StatusReasonInvalid, invalid("Forbidden: resourceVersionMatch is forbidden when continue is provided")},
		{"continue with resourceVersion", metav1.ListOptions{Limit: 2, Continue: first.Continue, ResourceVersion: first.ResourceVersion},
			400, metav1.StatusReasonBadRequest, "specifying resource version is not allowed when using continue"},
		{"continue not base64", metav1.ListOptions{Limit: 2, Continue: "garbage!!"},
			400, metav1.StatusReasonBadRequest, "invalid continue token: continue key is not valid: illegal base64 data at input byte 7"},
		{"continue escaping its prefix", metav1.ListOptions{Limit: 2, Continue: encodeToken(mustRV(t, first.ResourceVersion), "../secrets/x")},
			400, metav1.StatusReasonBadRequest, "invalid continue token: continue key is not valid: ../secrets/x"},
		{"continue without start", metav1.ListOptions{Limit: 2, Continue: encodeToken(mustRV(t, first.ResourceVersion), "")},
			400, metav1.StatusReasonBadRequest, "invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"},
		{"continue at resourceVersion 0", metav1.ListOptions{Limit: 2, Continue: encodeToken(0, "e-1")},
			400, metav1.StatusReasonBadRequest, "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cms.List(c.ctx, tc.opts)
			expectStatus(t, err, tc.code, tc.reason, tc.message)
		})
	}
	// A watch may only name a resourceVersionMatch with sendInitialEvents.
	_, err = cms.Watch(c.ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	expectStatus(t, err, 422, metav1.StatusReasonInvalid, invalid("Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))

	// continue with resourceVersion "0" is treated as continue alone.
	want, err := cms.List(c.ctx, metav1.ListOptions{Limit: 2, Continue: first.Continue})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cms.List(c.ctx, metav1.ListOptions{Limit: 2, Continue: first.Continue, ResourceVersion: "0"})
	if err != nil {
		t.Fatalf("continue with resourceVersion=0: %v", err)
	}
	if len(got.Items) != 2 || got.Items[0].Name != "e-2" || got.Items[1].Name != rootCA || got.ResourceVersion != first.ResourceVersion || !reflect.DeepEqual(got.Items, want.Items) {
		t.Errorf("continue with resourceVersion=0 gave %d items at %s, want e-2 and %s at %s", len(got.Items), got.ResourceVersion, rootCA, first.ResourceVersion)
	}
}

// TestTooLargeResourceVersion: a list not older than a resourceVersion the server has not
// reached waits briefly (3s in kube-apiserver), then answers 504 with Retry-After and
// "Too large resource version".
func TestTooLargeResourceVersion(t *testing.T) {
	t.Parallel()
	c := newCMClient(t, servers.stable)
	future := mustRV(t, c.listRV()) + 1000000
	httpClient, err := rest.HTTPClientFor(servers.stable)
	if err != nil {
		t.Fatal(err)
	}
	for _, query := range []string{
		"resourceVersion=" + strconv.FormatInt(future, 10) + "&resourceVersionMatch=NotOlderThan",
		"resourceVersion=" + strconv.FormatInt(future, 10), // no limit: not older than, too
	} {
		t.Run(query, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			// A raw request: client-go would retry on Retry-After.
			resp, err := httpClient.Get(servers.stable.Host + "/api/v1/namespaces/" + c.ns + "/configmaps?" + query)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			elapsed := time.Since(start)
			body, _ := io.ReadAll(resp.Body)
			var s metav1.Status
			if err := json.Unmarshal(body, &s); err != nil {
				t.Fatalf("%d %s: %v", resp.StatusCode, body, err)
			}
			wantPrefix := fmt.Sprintf("Timeout: Too large resource version: %d, current: ", future)
			wantCauses := []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
			if resp.StatusCode != http.StatusGatewayTimeout || s.Code != http.StatusGatewayTimeout || s.Reason != metav1.StatusReasonTimeout ||
				!strings.HasPrefix(s.Message, wantPrefix) || s.Details == nil || !reflect.DeepEqual(s.Details.Causes, wantCauses) || s.Details.RetryAfterSeconds != 1 {
				t.Errorf("got %d %s", resp.StatusCode, body)
			}
			if ra := resp.Header.Get("Retry-After"); ra != "1" {
				t.Errorf("Retry-After %q, want 1", ra)
			}
			if elapsed < 2*time.Second || elapsed > 10*time.Second {
				t.Errorf("answered after %v, want after a wait of about 3s", elapsed)
			}
		})
	}
}

// TestExpiredContinueToken: once the first page's resourceVersion is compacted, continuing fails
// with 410 and kube-apiserver's message, whose Status carries a token to continue from the
// latest state instead.
func TestExpiredContinueToken(t *testing.T) {
	t.Parallel()
	cs := clientset(t, servers.compacting)
	ctx := ctxFor(t, 30*time.Second)
	ns := namespace(t, cs)
	clk := newClock(t, cs)
	secrets := cs.CoreV1().Secrets(ns)
	for i := range 5 {
		if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := secrets.List(ctx, metav1.ListOptions{Limit: 2})
	if err != nil || first.Continue == "" {
		t.Fatalf("first page: %v, continue %q", err, first.Continue)
	}
	deadline := time.Now().Add(20 * compactionInterval)
	for {
		clk.advance(t)
		page, err := secrets.List(ctx, metav1.ListOptions{Limit: 2, Continue: first.Continue})
		if err == nil {
			if page.ResourceVersion != first.ResourceVersion || len(page.Items) != 2 || page.Items[0].Name != "s-2" {
				t.Fatalf("continued page at %s with %d items, want s-2, s-3 at %s", page.ResourceVersion, len(page.Items), first.ResourceVersion)
			}
			if time.Now().After(deadline) {
				t.Fatalf("continue token still valid after %v", 20*compactionInterval)
			}
			time.Sleep(200 * time.Millisecond)
			continue
		}
		s := expectStatus(t, err, http.StatusGone, metav1.StatusReasonExpired,
			"The provided continue parameter is too old to display a consistent list result. You can start a new list without "+
				"the continue parameter, or use the continue token in this response to retrieve the remainder of the results. "+
				"Continuing with the provided token results in an inconsistent list - objects that were created, modified, or "+
				"deleted between the time the first chunk was returned and now may show up in the list.")
		if s.Continue == "" {
			t.Fatalf("410 Status carries no continue token (kube-apiserver's does: the same start key at resourceVersion -1)")
		}
		rest, err := secrets.List(ctx, metav1.ListOptions{Limit: 10, Continue: s.Continue})
		if err != nil {
			t.Fatalf("continuing with the token from the 410: %v", err)
		}
		var names []string
		for _, s := range rest.Items {
			names = append(names, s.Name)
		}
		if !reflect.DeepEqual(names, []string{"s-2", "s-3", "s-4"}) {
			t.Errorf("continuing with the token from the 410 listed %v, want [s-2 s-3 s-4]", names)
		}
		return
	}
}

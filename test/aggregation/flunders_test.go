package aggregation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

var flundersGVR = schema.GroupVersionResource{Group: defaultApiServiceGroupName, Version: defaultApiServiceVersion, Resource: "flunders"}

// testFlunders waits until the aggregator proxies flunders, then compares create, get, list,
// watch and delete of flunders as the admin, with kubectl and client-go.
func testFlunders(t *testing.T, kube, lapis *side) {
	k, l := settleBoth(t.Context(), kube, lapis, func(ctx context.Context, s *side) (string, bool) {
		a := s.get(ctx, flundersPath, "")
		return mask(fmt.Sprintf("%d %s", a.code, canonicalJSON(a.body)), s.masks), a.code == 200
	})
	expectSame(t, "GET "+flundersPath+" through the aggregator", k, l)
	transcript(t, kube, lapis, flunderSequence)
}

// flunderYAML is a Flunder as a user writes it.
func flunderYAML(name string) string {
	return fmt.Sprintf(`apiVersion: wardle.example.com/v1alpha1
kind: Flunder
metadata:
  name: %s
  namespace: %s
  labels: {sample-label: "true"}
spec:
  reference: %s-ref
`, name, diffNamespace, name)
}

// flunderSequence creates flunders one (kubectl) and two (client-go) under a watch, reads them
// every way, deletes them (kubectl, client-go), and records what came of each request and the
// watch's events.
func flunderSequence(ctx context.Context, s *side) []step {
	var steps []step
	add := func(what, answer string) { steps = append(steps, step{what, mask(answer, s.masks)}) }
	res := s.dynamic.Resource(flundersGVR).Namespace(diffNamespace)
	out, err := s.kubectlIn(ctx, flunderYAML("one"), "create", "-f", "-")
	add("kubectl create -f (flunder one)", out+describeErr(err))
	list, err := res.List(ctx, metav1.ListOptions{})
	add("client-go list", objectJSON(list, err))
	rv := ""
	if list != nil {
		rv = list.GetResourceVersion()
	}
	w, err := res.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	add("client-go watch from the list's resourceVersion", describeErr(err))
	two := &unstructured.Unstructured{}
	_ = two.UnmarshalJSON([]byte(`{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"two"},"spec":{"reference":"one","referenceType":"Flunder"}}`))
	created, err := res.Create(ctx, two, metav1.CreateOptions{})
	add("client-go create (flunder two)", objectJSON(created, err))
	got, err := res.Get(ctx, "one", metav1.GetOptions{})
	add("client-go get (flunder one)", objectJSON(got, err))
	out, err = s.kubectl(ctx, "-n", diffNamespace, "get", "flunders")
	add("kubectl get flunders", out+describeErr(err))
	out, err = s.kubectl(ctx, "-n", diffNamespace, "get", "flunder", "two", "-o", "yaml")
	add("kubectl get flunder two -o yaml", out+describeErr(err))
	out, err = s.kubectl(ctx, "-n", diffNamespace, "delete", "flunder", "two")
	add("kubectl delete flunder two", out+describeErr(err))
	add("client-go delete (flunder one)", describeErr(res.Delete(ctx, "one", metav1.DeleteOptions{})))
	add("watch events", events(w, 3))
	list, err = res.List(ctx, metav1.ListOptions{})
	add("client-go list after the deletes", objectJSON(list, err))
	return steps
}

// events reads up to n events from w (nil: none), waiting at most 15 s, and stops it: their
// types and names first, then the objects.
func events(w watch.Interface, n int) string {
	if w == nil {
		return "no watch"
	}
	defer w.Stop()
	var names, objects strings.Builder
	timeout := time.After(15 * time.Second)
	for range n {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				return names.String() + "(watch ended)\n" + objects.String()
			}
			name := ""
			if u, ok := e.Object.(*unstructured.Unstructured); ok {
				name = u.GetName()
			}
			fmt.Fprintf(&names, "%s %s\n", e.Type, name)
			fmt.Fprintf(&objects, "%s %s\n", e.Type, objectJSON(e.Object, nil))
		case <-timeout:
			return names.String() + "(no more events in 15 s)\n" + objects.String()
		}
	}
	return names.String() + objects.String()
}

// objectJSON is obj as canonical JSON, or the error.
func objectJSON(obj any, err error) string {
	if err != nil {
		return describeErr(err)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return describeErr(err)
	}
	return canonicalJSON(b)
}

package sequences

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Prepare makes t ready for g's sequences: the namespace, its default ServiceAccount (which
// kube-apiserver alone does not create, and Pods need) and the custom resource definitions,
// established and served.
func (t *Target) Prepare(ctx context.Context, g *Generator) error {
	creates := []struct {
		path string
		body any
	}{
		{"/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": Namespace}}},
		{"/api/v1/namespaces/" + Namespace + "/serviceaccounts", map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default"}}},
	}
	for _, c := range creates {
		data, err := json.Marshal(c.body)
		if err != nil {
			return err
		}
		resp, answer, err := t.exchange(ctx, "POST", c.path, jsonType, data)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusConflict {
			return fmt.Errorf("%s: POST %s: %d %s", t.Name, c.path, resp.StatusCode, answer)
		}
	}
	// Applied, so that a server prepared before takes a changed schema.
	for _, crd := range g.CRDs() {
		data, err := json.Marshal(crd)
		if err != nil {
			return err
		}
		path := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + crd["metadata"].(map[string]any)["name"].(string)
		resp, answer, err := t.exchange(ctx, "PATCH", path+"?fieldManager=sequences&force=true", applyType, data)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("%s: apply %s: %d %s", t.Name, path, resp.StatusCode, answer)
		}
	}
	return t.awaitServed(ctx, g)
}

// awaitServed waits until every kind's collection answers 200.
func (t *Target) awaitServed(ctx context.Context, g *Generator) error {
	deadline := time.Now().Add(time.Minute)
	for _, k := range g.kinds {
		collection := k.path(Namespace, "")
		collection = collection[:len(collection)-1]
		for {
			resp, _, err := t.exchange(ctx, "GET", collection+"?limit=1", "", nil)
			if err == nil && resp.StatusCode == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s: %s not served after a minute", t.Name, collection)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// Discovery and the apply's type information follow the CRD a moment later.
	time.Sleep(2 * time.Second)
	return nil
}

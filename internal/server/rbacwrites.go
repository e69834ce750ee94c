package server

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lapis-dev/lapis/internal/auth/authz"
	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
)

// loopbackUserAgent is kube-apiserver's loopback client's user agent (client-go's default for a
// binary named kube-apiserver: its version without suffix, then a commit lapis does not have,
// as kube-reference's unstamped build says "kube-apiserver/v0.0.0 (linux/amd64)
// kubernetes/$Format" in its audit log), so lapis's own requests read in logs and audit as
// kube's, and its writes are under kube's field manager.
var loopbackUserAgent = loopbackManager + "/" + strings.SplitN(Version.GitVersion, "-", 2)[0] + " (" + Version.Platform + ") kubernetes/$Format"

// loopbackManager is the field manager of the loopback client's writes: the product of its user
// agent, as the request path names a manager when the client gives none; kube-apiserver's.
const loopbackManager = "kube-apiserver"

// createDirect is the RBAC bootstrap policy's first-start Creator: the objects service's create,
// as the loopback's POST reaches it (kube's defaults, validation and admission, managedFields
// under the loopback's manager, etcd), without the HTTP round trip of each object.
func createDirect(svc *objects.Service) authz.Creator {
	return func(ctx context.Context, resource schema.GroupVersionResource, namespace string, obj *unstructured.Unstructured) error {
		r, ok := svc.Catalog().Lookup(resource)
		if !ok {
			return fmt.Errorf("%s is not served", resource)
		}
		// A POST's create options, as admission sees them.
		ctx = catalog.WithRequestOptions(ctx, nil, "", "")
		_, err := svc.Create(ctx, r, namespace, obj, objects.WriteOptions{Manager: loopbackManager})
		return err
	}
}

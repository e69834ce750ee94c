package handlers

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/kubelet/client"
	"k8s.io/kubernetes/pkg/registry/core/node"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	podrest "k8s.io/kubernetes/pkg/registry/core/pod/rest"
	nodeutil "k8s.io/kubernetes/pkg/util/node"
	"k8s.io/utils/ptr"

	"github.com/lapis-dev/lapis/internal/catalog"
)

var podsGR = catalog.PodsGVR.GroupResource()

// kubeletPreferredAddressTypes is kube-apiserver's default --kubelet-preferred-address-types.
var kubeletPreferredAddressTypes = []v1.NodeAddressType{v1.NodeHostName, v1.NodeInternalDNS, v1.NodeInternalIP, v1.NodeExternalDNS, v1.NodeExternalIP}

// kubeletPort is kube-apiserver's default --kubelet-port.
const kubeletPort = 10250

// connect answers the subresources that reach a kubelet or a Pod (log, exec, attach,
// portforward, proxy of Pods, Services and Nodes) with kube's own location logic: its answers
// for a Pod no node runs, a Service without endpoints, a missing Node. lapis runs no kubelet and
// proxies nowhere: where kube would connect, it answers 503.
func (h *Handler) connect(rq *request) error {
	ctx := kubeContext(rq)
	query := rq.req.URL.Query()
	switch rq.resource.Name {
	case "pods":
		pods := podGetter{h: h, r: rq.resource}
		conn := nodeConnections{h: h, asResource: podsGR}
		switch rq.info.Subresource {
		case "log":
			return h.podLog(rq, ctx, pods, conn)
		case "exec":
			opts := &api.PodExecOptions{}
			if err := decodeConnectOptions(query, opts); err != nil {
				return err
			}
			_, err := (&podrest.ExecREST{Store: pods, KubeletConn: conn, Authorizer: h.authz}).Connect(ctx, rq.info.Name, opts, nil)
			return connectOutcome(rq, err)
		case "attach":
			opts := &api.PodAttachOptions{}
			if err := decodeConnectOptions(query, opts); err != nil {
				return err
			}
			_, err := (&podrest.AttachREST{Store: pods, KubeletConn: conn, Authorizer: h.authz}).Connect(ctx, rq.info.Name, opts, nil)
			return connectOutcome(rq, err)
		case "portforward":
			opts := &api.PodPortForwardOptions{}
			if err := decodeConnectOptions(query, opts); err != nil {
				return err
			}
			_, err := (&podrest.PortForwardREST{Store: pods, KubeletConn: conn, Authorizer: h.authz}).Connect(ctx, rq.info.Name, opts, nil)
			return connectOutcome(rq, err)
		case "proxy":
			if _, _, err := pod.ResourceLocation(ctx, pods, nil, rq.info.Name); err != nil {
				return err
			}
			return errNoConnection(rq)
		}
	case "services":
		return h.serviceLocation(ctx, rq)
	case "nodes":
		conn := nodeConnections{h: h, asResource: schema.GroupResource{Resource: "nodes"}}
		if _, _, err := node.ResourceLocation(nil, conn, nil, ctx, rq.info.Name); err != nil {
			return err
		}
		return errNoConnection(rq)
	}
	return methodNotAllowed(rq.resource, rq.info.Verb)
}

// podLog is kube's LogREST.Get: a Pod no node runs has no log yet, which kube answers with 204
// and no body.
func (h *Handler) podLog(rq *request, ctx context.Context, pods podGetter, conn nodeConnections) error {
	opts := &api.PodLogOptions{}
	if err := decodeConnectOptions(rq.req.URL.Query(), opts); err != nil {
		return err
	}
	splitStreams := utilfeature.DefaultFeatureGate.Enabled(features.PodLogsQuerySplitStreams)
	if splitStreams && opts.Stream == nil {
		opts.Stream = ptr.To(api.LogStreamAll)
	}
	if errs := validation.ValidatePodLogOptions(opts, splitStreams); len(errs) > 0 {
		return apierrors.NewInvalid(api.Kind("PodLogOptions"), rq.info.Name, errs)
	}
	location, _, err := pod.LogLocation(ctx, pods, conn, rq.info.Name, opts)
	if err != nil {
		return err
	}
	if location == nil {
		rq.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return errNoConnection(rq)
}

// serviceLocation is kube's service REST ResourceLocation up to where it picks an endpoint:
// lapis runs no Pods, so no Service has an endpoint to proxy to.
func (h *Handler) serviceLocation(ctx context.Context, rq *request) error {
	_, name, port, valid := utilnet.SplitSchemeNamePort(rq.info.Name)
	if !valid {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", rq.info.Name))
	}
	if portNum, err := strconv.ParseInt(port, 10, 64); err == nil {
		svc, err := h.objects.Get(ctx, rq.resource, rq.info.Namespace, name)
		if err != nil {
			return err
		}
		found := false
		ports, _, _ := unstructuredSlice(svc.Object, "spec", "ports")
		for _, p := range ports {
			if n, ok := p["port"].(int64); ok && n == portNum {
				found = true
				break
			}
		}
		if !found {
			return apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", portNum, name))
		}
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
}

func unstructuredSlice(obj map[string]any, path ...string) ([]map[string]any, bool, error) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		cur = m[p]
	}
	list, ok := cur.([]any)
	if !ok {
		return nil, false, nil
	}
	out := make([]map[string]any, 0, len(list))
	for _, item := range list {
		if m, ok := item.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out, true, nil
}

// decodeConnectOptions reads a connect request's query into kube's options, as kube's handler
// does (v1 parameters, converted to the internal version).
func decodeConnectOptions(query map[string][]string, into runtime.Object) error {
	if err := legacyscheme.ParameterCodec.DecodeParameters(query, schema.GroupVersion{Version: "v1"}, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// connectOutcome is the answer to a connect kube's endpoint accepted or refused: lapis cannot
// carry out what kube would (reach a kubelet).
func connectOutcome(rq *request, err error) error {
	if err != nil {
		return err
	}
	return errNoConnection(rq)
}

// errNoConnection is the answer where kube-apiserver would open a connection to a kubelet or a
// Pod: lapis has no kubelets to reach.
func errNoConnection(rq *request) error {
	return apierrors.NewServiceUnavailable(fmt.Sprintf("lapis runs no kubelet and proxies to no node or Pod: cannot serve %s/%s of %q",
		rq.info.Resource, rq.info.Subresource, rq.info.Name))
}

// podGetter is kube's pod.ResourceGetter over lapis's objects: Pods in the internal version.
type podGetter struct {
	h *Handler
	r *catalog.Resource
}

func (g podGetter) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	u, err := g.h.objects.Get(ctx, g.r, genericapirequest.NamespaceValue(ctx), name)
	if err != nil {
		return nil, err
	}
	obj, err := ToInternal(u)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return obj, nil
}

// nodeConnections is kube's NodeConnectionInfoGetter over lapis's Nodes. A missing Node is
// NotFound of the resource requested (kube's node lookup reads it from the request: "pods").
type nodeConnections struct {
	h          *Handler
	asResource schema.GroupResource
}

func (c nodeConnections) GetConnectionInfo(ctx context.Context, nodeName types.NodeName) (*client.ConnectionInfo, error) {
	nodes, ok := c.h.objects.Catalog().Lookup(catalog.NodesGVR)
	if !ok {
		return nil, apierrors.NewNotFound(c.asResource, string(nodeName))
	}
	u, err := c.h.objects.Get(ctx, nodes, "", string(nodeName))
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(c.asResource, string(nodeName))
	}
	if err != nil {
		return nil, err
	}
	var n v1.Node
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &n); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	host, err := nodeutil.GetPreferredNodeAddress(&n, kubeletPreferredAddressTypes)
	if err != nil {
		// kube answers 500 with this message.
		return nil, apierrors.NewServiceUnavailable(err.Error())
	}
	port := int(n.Status.DaemonEndpoints.KubeletEndpoint.Port)
	if port <= 0 {
		port = kubeletPort
	}
	return &client.ConnectionInfo{Scheme: "https", Hostname: host, Port: strconv.Itoa(port), Transport: noTransport{}, InsecureSkipTLSVerifyTransport: noTransport{}}, nil
}

// noTransport is the kubelet transport of a server that reaches no kubelet.
type noTransport struct{}

func (noTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("lapis runs no kubelet")
}

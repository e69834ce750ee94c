package handlers

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"
	"k8s.io/kubernetes/pkg/probe"
	"k8s.io/kubernetes/pkg/registry/core/componentstatus"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// componentServers returns the servers componentstatuses reports on, named.
type componentServers func() map[string]componentstatus.Server

// The secure ports of kube-scheduler and kube-controller-manager (kubeschedulerconfig's
// DefaultKubeSchedulerPort, pkg/cluster/ports' KubeControllerManagerPort; importing them would
// bring in kube's generic server).
const (
	kubeSchedulerPort         = 10259
	kubeControllerManagerPort = 10257
)

// etcdProbeTimeout bounds the etcd check of a component status.
const etcdProbeTimeout = 2 * time.Second

// kubeComponents are kube-apiserver's servers to validate (pkg/registry/core/rest's
// serversToValidate): the controller manager and scheduler, probed where kube probes them (lapis
// runs neither), and lapis's etcd.
func (h *Handler) kubeComponents() map[string]componentstatus.Server {
	return map[string]componentstatus.Server{
		"controller-manager": &componentstatus.HttpServer{EnableHTTPS: true, TLSConfig: &tls.Config{InsecureSkipVerify: true}, Addr: "127.0.0.1", Port: kubeControllerManagerPort, Path: "/healthz"},
		"scheduler":          &componentstatus.HttpServer{EnableHTTPS: true, TLSConfig: &tls.Config{InsecureSkipVerify: true}, Addr: "127.0.0.1", Port: kubeSchedulerPort, Path: "/healthz"},
		"etcd-0":             etcdServer{h},
	}
}

// etcdServer checks lapis's etcd as kube's EtcdServer checks its etcd: "ok" when it answers.
type etcdServer struct{ h *Handler }

func (e etcdServer) DoServerCheck() (probe.Result, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), etcdProbeTimeout)
	defer cancel()
	if _, err := e.h.objects.Store().Revision(ctx); err != nil {
		return probe.Failure, "", err
	}
	return probe.Success, "ok", nil
}

// componentStatuses answers get and list of componentstatuses with kube's REST endpoint
// (statuses are computed on every request, never stored or watched).
func (h *Handler) componentStatuses(rq *request) error {
	storage := componentstatus.NewStorage(h.computed.components)
	ctx := kubeContext(rq)
	list := rq.info.Verb == "list"
	target, err := readTarget(rq, list)
	if err != nil {
		return err
	}
	var items []runtime.Object
	if list {
		opts, err := listOptions(rq.req, false)
		if err != nil {
			return err
		}
		out, err := storage.List(ctx, &opts)
		if err != nil {
			return err
		}
		for i := range out.(*api.ComponentStatusList).Items {
			items = append(items, &out.(*api.ComponentStatusList).Items[i])
		}
	} else {
		var opts metav1.GetOptions
		out, err := storage.Get(ctx, rq.info.Name, &opts)
		if err != nil {
			return err
		}
		items = append(items, out)
	}
	served := make([]*unstructured.Unstructured, 0, len(items))
	for _, item := range items {
		u, err := toServed(item, rq.resource.GroupVersion)
		if err != nil {
			return err
		}
		served = append(served, u)
	}
	if target.As != "" {
		at := *rq
		at.resource = componentStatusPrinted(rq.resource)
		writeConverted(&at, target, served, metav1.ListMeta{})
		return nil
	}
	if !list {
		h.writeObject(rq, http.StatusOK, served[0])
		return nil
	}
	raws := make([][]byte, 0, len(served))
	for _, u := range served {
		raw, err := u.MarshalJSON()
		if err != nil {
			return err
		}
		raws = append(raws, raw)
	}
	h.writeList(rq, http.StatusOK, target.MediaType, metav1.ListMeta{}, raws, nil)
	return nil
}

// componentStatusPrinted is r with kube's printer of component statuses.
func componentStatusPrinted(r *catalog.Resource) *catalog.Resource {
	tables := printers.NewTableGenerator().With(printersinternal.AddHandlers)
	empty, err := tables.GenerateTable(&api.ComponentStatus{}, printers.GenerateOptions{Wide: true})
	if err != nil {
		return r
	}
	out := *r
	out.Printer = &catalog.Printer{
		Columns: empty.ColumnDefinitions,
		Cells: func(u *unstructured.Unstructured) ([]any, error) {
			obj, err := toInternal(u)
			if err != nil {
				return nil, err
			}
			table, err := tables.GenerateTable(obj, printers.GenerateOptions{Wide: true, NoHeaders: true})
			if err != nil {
				return nil, err
			}
			if len(table.Rows) != 1 {
				return nil, fmt.Errorf("kube's printer gave %d rows for one ComponentStatus", len(table.Rows))
			}
			return table.Rows[0].Cells, nil
		},
	}
	return &out
}

package special

import (
	"context"
	"crypto/tls"
	"fmt"
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
	"github.com/lapis-dev/lapis/internal/handlers"
	"github.com/lapis-dev/lapis/internal/objects"
)

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
func kubeComponents(svc *objects.Service) func() map[string]componentstatus.Server {
	return func() map[string]componentstatus.Server {
		return map[string]componentstatus.Server{
			"controller-manager": &componentstatus.HttpServer{EnableHTTPS: true, TLSConfig: &tls.Config{InsecureSkipVerify: true}, Addr: "127.0.0.1", Port: kubeControllerManagerPort, Path: "/healthz"},
			"scheduler":          &componentstatus.HttpServer{EnableHTTPS: true, TLSConfig: &tls.Config{InsecureSkipVerify: true}, Addr: "127.0.0.1", Port: kubeSchedulerPort, Path: "/healthz"},
			"etcd-0":             etcdServer{svc},
		}
	}
}

// etcdServer checks lapis's etcd as kube's EtcdServer checks its etcd: "ok" when it answers.
type etcdServer struct{ objects *objects.Service }

func (e etcdServer) DoServerCheck() (probe.Result, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), etcdProbeTimeout)
	defer cancel()
	if _, err := e.objects.Store().Revision(ctx); err != nil {
		return probe.Failure, "", err
	}
	return probe.Success, "ok", nil
}

// componentStatuses answers get and list of componentstatuses with kube's REST endpoint
// (statuses are computed on every request, never stored or watched).
type componentStatuses struct {
	servers func() map[string]componentstatus.Server
}

var _ handlers.Endpoint = (*componentStatuses)(nil)

func (c *componentStatuses) Serve(rq *handlers.Request) error {
	list := rq.Info().Verb == "list"
	target, err := rq.ReadTarget(list)
	if err != nil {
		return err
	}
	items, err := c.read(rq, list)
	if err != nil {
		return err
	}
	served := make([]*unstructured.Unstructured, 0, len(items))
	for _, item := range items {
		u, err := handlers.ToServed(item, rq.Resource().GroupVersion)
		if err != nil {
			return err
		}
		served = append(served, u)
	}
	printed := rq.Resource()
	if target.As != "" {
		printed = componentStatusPrinted(printed)
	}
	return rq.RespondRead(target, printed, served, list)
}

// read is what kube's REST endpoint answers: every status for a list, else the named one.
func (c *componentStatuses) read(rq *handlers.Request, list bool) ([]runtime.Object, error) {
	storage := componentstatus.NewStorage(c.servers)
	ctx := rq.Context()
	if !list {
		out, err := storage.Get(ctx, rq.Info().Name, &metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return []runtime.Object{out}, nil
	}
	opts, err := rq.ListOptions()
	if err != nil {
		return nil, err
	}
	out, err := storage.List(ctx, &opts)
	if err != nil {
		return nil, err
	}
	var items []runtime.Object
	for i := range out.(*api.ComponentStatusList).Items {
		items = append(items, &out.(*api.ComponentStatusList).Items[i])
	}
	return items, nil
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
			obj, err := handlers.ToInternal(u)
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

package aggregator

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-openapi/pkg/aggregator"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/lapis-dev/lapis/internal/openapi"
	upstream "github.com/lapis-dev/lapis/internal/upstream/aggregator"
)

// openAPIResync is how often kube's OpenAPI aggregation controllers download an extension
// server's documents again after a success.
const openAPIResync = time.Minute

// openAPIDocs keeps the extension servers' OpenAPI documents as kube's OpenAPI v2 and v3
// aggregation controllers do: each remote APIService's v2 document (merged into /openapi/v2)
// and v3 discovery document (its group versions listed in /openapi/v3, their documents
// proxied), downloaded as system:aggregator when the APIService is added or changed, then
// every minute, and again with back-off after a failure.
type openAPIDocs struct {
	v3    upstream.V3Downloader
	v2    upstream.V2Downloader
	queue workqueue.TypedRateLimitingInterface[string]

	mu       sync.Mutex
	revision uint64
	services map[string]*openAPIService // by APIService name
}

type openAPIService struct {
	apiService *apiregistrationv1.APIService
	handler    http.Handler
	v2         upstream.CacheableDownloader
	downloaded *spec.Swagger                // the last v2 document downloaded
	spec       *spec.Swagger                // what of it is merged
	v3         *handler3.OpenAPIV3Discovery // the last v3 discovery document downloaded
}

var _ openapi.Aggregated = (*openAPIDocs)(nil)

func newOpenAPIDocs() *openAPIDocs {
	return &openAPIDocs{
		v3: upstream.NewV3Downloader(), v2: upstream.NewV2Downloader(), services: map[string]*openAPIService{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "open_api_aggregation_controller"}),
	}
}

// add starts or updates the downloads of a remote APIService's documents.
func (o *openAPIDocs) add(apiService *apiregistrationv1.APIService, handler http.Handler) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.services[apiService.Name]
	if s == nil {
		s = &openAPIService{v2: upstream.NewCacheableDownloader(apiService.Name, &o.v2, handler)}
		o.services[apiService.Name] = s
	}
	s.apiService, s.handler = apiService, handler
	s.v2.UpdateHandler(handler)
	o.queue.Add(apiService.Name)
}

// remove forgets an APIService's documents.
func (o *openAPIDocs) remove(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.services[name]; ok {
		delete(o.services, name)
		o.revision++
	}
}

// run downloads the documents of the APIServices queued until ctx ends.
func (o *openAPIDocs) run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		o.queue.ShutDown()
	}()
	for {
		name, shutdown := o.queue.Get()
		if shutdown {
			return
		}
		if err := o.sync(name); err != nil {
			o.queue.AddRateLimited(name)
		} else {
			o.queue.Forget(name)
			o.queue.AddAfter(name, openAPIResync)
		}
		o.queue.Done(name)
	}
}

// sync downloads an APIService's documents: a v3 discovery document that cannot be had keeps
// its last, a v2 document goes, as kube's controllers keep them.
func (o *openAPIDocs) sync(name string) error {
	o.mu.Lock()
	s := o.services[name]
	o.mu.Unlock()
	if s == nil {
		return nil
	}
	v3, status, err3 := o.v3.OpenAPIV3Root(s.handler)
	swagger, _, err2 := s.v2.Get()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.services[name] != s {
		return nil // removed or replaced meanwhile
	}
	changed := false
	if err3 == nil && status == http.StatusOK && !reflect.DeepEqual(s.v3, v3) {
		s.v3, changed = v3, true
	}
	// kube merges no v2 document of a server it cannot download it from, and of one it can,
	// only the paths of the APIService's group version (and what they refer to). The
	// downloader returns the document it has while its ETag is the same: nothing to rebuild.
	if err2 != nil {
		swagger = nil
	}
	if swagger != s.downloaded {
		s.downloaded, s.spec, changed = swagger, nil, true
		if swagger != nil {
			gv := s.apiService.Spec
			s.spec = aggregator.FilterSpecByPathsWithoutSideEffects(swagger, []string{"/apis/" + gv.Group + "/" + gv.Version + "/"})
		}
	}
	if changed {
		o.revision++
	}
	if err3 != nil {
		return err3
	}
	return err2
}

// Revision changes whenever the documents do.
func (o *openAPIDocs) Revision() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.revision
}

// V2 are the extension servers' v2 documents, in the order kube merges them.
func (o *openAPIDocs) V2() []*spec.Swagger {
	o.mu.Lock()
	defer o.mu.Unlock()
	apiServices := make([]*apiregistrationv1.APIService, 0, len(o.services))
	for _, s := range o.services {
		if s.spec != nil {
			apiServices = append(apiServices, s.apiService)
		}
	}
	upstream.SortByPriority(apiServices)
	out := make([]*spec.Swagger, len(apiServices))
	for i, a := range apiServices {
		out[i] = o.services[a.Name].spec
	}
	return out
}

// V3Paths are the extension servers' group versions' v3 documents: path ("apis/GROUP/VERSION")
// to server-relative URL.
func (o *openAPIDocs) V3Paths() map[string]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]string{}
	for _, s := range o.services {
		if s.v3 == nil {
			continue
		}
		for path, gv := range s.v3.Paths {
			out[path] = gv.ServerRelativeURL
		}
	}
	return out
}

// ServeV3 proxies the v3 document of an extension server's group version.
func (o *openAPIDocs) ServeV3(w http.ResponseWriter, r *http.Request) bool {
	path := strings.TrimPrefix(r.URL.Path, "/openapi/v3/")
	o.mu.Lock()
	var handler http.Handler
	for _, s := range o.services {
		if s.v3 == nil {
			continue
		}
		if _, ok := s.v3.Paths[path]; ok {
			handler = s.handler
			break
		}
	}
	o.mu.Unlock()
	if handler == nil {
		return false
	}
	handler.ServeHTTP(w, r)
	return true
}

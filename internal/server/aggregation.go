package server

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lapis-dev/lapis/internal/aggregator"
	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/discovery"
)

// aggregation builds discovery and the aggregation layer in front of it, before lapis serves:
// the chain routes an extension server's group versions to the aggregator's proxies, and kube's
// autoregister-completion readiness check asks the aggregator.
func (st *startup) aggregation() error {
	st.discovery = discovery.NewHandler(st.cat)
	agg, err := aggregator.New(aggregator.Config{
		Loopback:           st.lb.config,
		Core:               st.lb.factory,
		Discovery:          st.discovery,
		ProxyClientCertKey: st.frontProxy.CurrentCertKeyContent,
		EndpointRouting:    st.s.cfg.EnableAggregatorRouting,
		Local:              servedGroupVersions(st.cat),
	})
	if err != nil {
		return err
	}
	st.aggregator = agg
	st.frontProxy.AddListener(agg.CertificateListener())
	st.s.hooks.addCheck(aggregator.CheckAutoregistered, agg.Autoregistered)
	return nil
}

// servedGroupVersions are the group versions of lapis's built-in resources, each once.
func servedGroupVersions(cat *catalog.Catalog) []schema.GroupVersion {
	seen := map[schema.GroupVersion]bool{}
	var out []schema.GroupVersion
	for _, r := range cat.All() {
		if !r.ServedByAPIExtensions && !seen[r.GroupVersion] {
			seen[r.GroupVersion] = true
			out = append(out, r.GroupVersion)
		}
	}
	return out
}

// aggregationStartTimeout bounds how long readiness waits for the aggregation layer: an
// extension server that does not answer holds kube's discovery hook, and lapis then serves
// meanwhile with /readyz saying what is missing, as kube's.
const aggregationStartTimeout = 5 * time.Second

// runAggregation runs the aggregation layer from now on; the channel is closed once its hooks
// have run and the local APIServices have been seen available, or after
// aggregationStartTimeout.
func (st *startup) runAggregation() <-chan struct{} {
	done := make(chan struct{})
	ran := make(chan error, 1)
	go func() { ran <- st.aggregator.Run(st.run, st.s.hooks) }()
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(st.run, aggregationStartTimeout)
		defer cancel()
		select {
		case err := <-ran:
			if err != nil {
				if st.run.Err() == nil {
					st.s.log.Error("aggregation layer", "err", err)
				}
				return
			}
		case <-ctx.Done():
			st.s.log.Warn("the aggregation layer is not ready yet; serving meanwhile")
			return
		}
		_ = wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
			return st.aggregator.Autoregistered(nil) == nil, nil
		})
	}()
	return done
}

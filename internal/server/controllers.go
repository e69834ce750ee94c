package server

import (
	"context"

	lapisadmission "github.com/lapis-dev/lapis/internal/admission"
	"github.com/lapis-dev/lapis/internal/auth/authn"
	"github.com/lapis-dev/lapis/internal/controllers/clusterroleaggregation"
	"github.com/lapis-dev/lapis/internal/controllers/quota"
	"github.com/lapis-dev/lapis/internal/controllers/tokens"
	"github.com/lapis-dev/lapis/internal/pki"
)

// runControllerManager starts the kube-controller-manager controllers lapis runs over its
// loopback client (namespace deletion, garbage collection and kube-root-ca.crt start with the
// storage; see Start). None runs when lapis is kube-apiserver alone (Config.KubeAPIServerOnly).
func (s *Server) runControllerManager(ctx context.Context, lb *loopback, authenticator *authn.Authenticator, creds *pki.Credentials) {
	// The clusterrole-aggregation controller fills aggregated roles.
	go clusterroleaggregation.Run(ctx, lb.client, lb.factory)
	// The ValidatingAdmissionPolicy status controller (type checking).
	go func() {
		if err := lapisadmission.RunPolicyStatus(ctx, lapisadmission.Options{Client: lb.client, Factory: lb.factory}); err != nil && ctx.Err() == nil {
			s.log.Error("ValidatingAdmissionPolicy status controller stopped", "err", err)
		}
	}()
	// The token controller fills legacy ServiceAccount token Secrets.
	go func() {
		if err := tokens.Run(ctx, lb.client, lb.factory, authenticator.LegacyTokenGenerator(), creds.CAPEM); err != nil && ctx.Err() == nil {
			s.log.Error("ServiceAccount token controller stopped", "err", err)
		}
	}()
	// The resourcequota controller: quota admission refuses writes until it has computed a
	// quota's status. It starts with the first quota.
	go func() {
		if err := quota.RunOnceNeeded(ctx, s.objects, lb.config, lb.factory, s.log); err != nil {
			s.log.Error("resource quota controller not running", "err", err)
		}
	}()
}

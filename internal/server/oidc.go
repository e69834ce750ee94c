package server

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	"k8s.io/kubernetes/pkg/routes"
	"k8s.io/kubernetes/pkg/serviceaccount"
)

// tokenIssuer is what ServiceAccount issuer discovery publishes: the issuer of lapis's tokens
// and the keys they are verified with.
type tokenIssuer interface {
	Issuer() string
	PublicKeys() serviceaccount.PublicKeysGetter
}

// issuerDiscovery serves kube's ServiceAccount issuer discovery documents,
// /.well-known/openid-configuration and /openid/v1/jwks, with kube's own metadata provider and
// handlers, as kube-apiserver does: the keys' URI is --service-account-jwks-uri or lapis's own
// at its advertised address. As kube, lapis serves neither when the issuer cannot be described
// (not an https URL): nil then, and why is logged.
func (s *Server) issuerDiscovery(issuer tokenIssuer) http.Handler {
	external := advertised(s.cfg, s.listener.Addr()).String()
	md, err := serviceaccount.NewOpenIDMetadataProvider(issuer.Issuer(), s.cfg.ServiceAccountJWKSURI, external, issuer.PublicKeys())
	if err != nil {
		s.log.Warn("ServiceAccount issuer discovery is not served", "err", err)
		return nil
	}
	container := restful.NewContainer()
	routes.NewOpenIDMetadataServer(md).Install(container)
	return container
}

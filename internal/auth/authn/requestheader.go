package authn

import (
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
)

// requestHeader is kube's front-proxy authenticator: a client certificate of the request-header
// CA (with one of the allowed common names, when names are given) vouches for the user, UID,
// groups and extra its request's headers name. Any other certificate is refused here and left
// to the client-certificate authenticator.
func requestHeader(rh *authenticatorfactory.RequestHeaderConfig, audiences authenticator.Audiences) authenticator.Request {
	return authenticator.WrapAudienceAgnosticRequest(audiences, headerrequest.NewDynamicVerifyOptionsSecure(
		rh.CAContentProvider.VerifyOptions, rh.AllowedClientNames,
		rh.UsernameHeaders, rh.UIDHeaders, rh.GroupHeaders, rh.ExtraHeaderPrefixes))
}

// clearingHeaders removes the configured front-proxy headers from an authenticated request,
// as kube's authentication filter does given its request-header configuration (lapis's
// filter is given none): whoever the request is, they never reach what serves it.
type clearingHeaders struct {
	authenticator.Request
	config *authenticatorfactory.RequestHeaderConfig
}

func (c clearingHeaders) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	resp, ok, err := c.Request.AuthenticateRequest(req)
	if ok && err == nil {
		headerrequest.ClearAuthenticationHeaders(req.Header,
			c.config.UsernameHeaders, c.config.UIDHeaders, c.config.GroupHeaders, c.config.ExtraHeaderPrefixes)
	}
	return resp, ok, err
}

var _ authenticator.Request = clearingHeaders{}

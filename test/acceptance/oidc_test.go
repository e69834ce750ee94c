package acceptance

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestServiceAccountIssuerDiscovery: lapis serves kube's ServiceAccount issuer discovery
// documents: the issuer and its keys' URI at lapis's address, and keys among which is the one
// that signed a ServiceAccount token; ServiceAccounts may read them (kube's bootstrap binding of
// system:service-account-issuer-discovery), anonymous users may not.
func TestServiceAccountIssuerDiscovery(t *testing.T) {
	l := startLapis(t, "--service-account-issuer", "https://issuer.lapis.example")
	var config struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal([]byte(l.must(t, "get", "--raw", "/.well-known/openid-configuration")), &config); err != nil {
		t.Fatal(err)
	}
	if config.Issuer != "https://issuer.lapis.example" || config.JWKSURI != l.server+"/openid/v1/jwks" {
		t.Errorf("openid-configuration: %+v, want the issuer and %s/openid/v1/jwks", config, l.server)
	}
	var jwks struct {
		Keys []struct {
			KID string `json:"kid"`
			Use string `json:"use"`
		} `json:"keys"`
	}
	if err := json.Unmarshal([]byte(l.must(t, "get", "--raw", "/openid/v1/jwks")), &jwks); err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(l.must(t, "create", "token", "default"))
	header, _ := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
	var jwt struct {
		KID string `json:"kid"`
	}
	_ = json.Unmarshal(header, &jwt)
	found := false
	for _, k := range jwks.Keys {
		found = found || (k.KID == jwt.KID && k.Use == "sig")
	}
	if !found || jwt.KID == "" {
		t.Errorf("the token's key %q is not among the published keys %+v", jwt.KID, jwks.Keys)
	}

	if code, body := l.do(t, "GET", "/openid/v1/jwks", "", "", false); code != http.StatusForbidden {
		t.Errorf("anonymous: %d %s, want 403", code, body)
	}
	if a := l.request(t, "GET", "/openid/v1/jwks", "", "Authorization: Bearer "+token); a.code != http.StatusOK {
		t.Errorf("as a ServiceAccount: %d %s, want 200", a.code, a.body)
	}
}

package authn

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationapi "k8s.io/kubernetes/pkg/apis/authentication"
	"k8s.io/kubernetes/pkg/registry/authentication/tokenreview"
)

// TestTokenReview: kube's TokenReview endpoint over the Authenticator answers as
// kube-apiserver 1.37 does (asked of kube-reference, anonymous on): errors, audiences, the
// anonymous answer for a blank token.
func TestTokenReview(t *testing.T) {
	c := newCluster()
	a, err := New(Config{AdminToken: adminSecret, Anonymous: true, ServiceAccounts: ServiceAccountConfig{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	c.use(a)
	saToken := issue(t, a, c, nil)
	review := tokenreview.NewREST(a, a.APIAudiences())
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:ns1", "system:authenticated"}
	tests := []struct {
		name          string
		token         string
		audiences     []string
		authenticated bool
		user          string
		groups        []string
		audiencesOut  []string
		err           string
	}{
		{name: "service account", token: saToken, authenticated: true, user: "system:serviceaccount:ns1:sa1", groups: saGroups, audiencesOut: []string{DefaultIssuer}},
		{name: "admin", token: adminSecret, authenticated: true, user: "admin", groups: []string{"system:masters", "system:authenticated"}, audiencesOut: []string{DefaultIssuer}},
		{name: "unknown", token: "nope", err: "invalid bearer token"},
		{name: "two words", token: "a b", err: "invalid bearer token"},
		{name: "blank", token: " ", authenticated: true, user: "system:anonymous", groups: []string{"system:unauthenticated"}, audiencesOut: []string{DefaultIssuer}},
		{name: "other audience", token: saToken, audiences: []string{"vault"},
			err: `[invalid bearer token, token audiences ["` + DefaultIssuer + `"] is invalid for the target audiences ["vault"]]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := review.Create(context.Background(), &authenticationapi.TokenReview{Spec: authenticationapi.TokenReviewSpec{Token: tt.token, Audiences: tt.audiences}}, nil, &metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			st := obj.(*authenticationapi.TokenReview).Status
			if st.Authenticated != tt.authenticated || st.User.Username != tt.user || !slices.Equal(st.User.Groups, tt.groups) ||
				!slices.Equal(st.Audiences, tt.audiencesOut) || st.Error != tt.err {
				t.Errorf("status %+v", st)
			}
		})
	}
}

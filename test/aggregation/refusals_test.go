package aggregation

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Users of the refusal tests: nobody has no RBAC at all; reader may read flunders in the
// namespace, not write them.
const (
	nobody = "wardle-nobody"
	reader = "wardle-reader"
)

// testRefusals compares what RBAC refuses: a 403 from the aggregator, which authorizes before
// it proxies, and one from the extension server's delegated authorization (its
// SubjectAccessReview to the API server). kube authorizes a proxied request with the same RBAC
// the SubjectAccessReview consults, so a request the extension server refuses never gets past
// the aggregator: the test speaks to the extension server as the aggregator does, with the
// front-proxy client certificate both servers were given, naming the user in X-Remote-User.
func testRefusals(t *testing.T, kube, lapis *side) {
	transcript(t, kube, lapis, refusalSequence)
}

func refusalSequence(ctx context.Context, s *side) []step {
	var steps []step
	add := func(what, answer string) { steps = append(steps, step{what, mask(answer, s.masks)}) }
	for _, user := range []string{nobody, reader} {
		if user == reader {
			add("Role and RoleBinding for "+reader, describeErr(grantReader(ctx, s)))
			add("kubectl auth can-i list flunders --as "+reader, canI(ctx, s, reader))
		}
		out, err := s.kubectl(ctx, "-n", diffNamespace, "--as", user, "get", "flunders")
		add("kubectl get flunders --as "+user, out+describeErr(err))
		out, err = s.kubectlIn(ctx, flunderYAML("refused"), "--as", user, "create", "-f", "-")
		add("kubectl create -f (flunder refused) --as "+user, out+describeErr(err))
		a := s.do(ctx, s.http, "GET", flundersPath, "application/json", http.Header{"Impersonate-User": {user}})
		add("GET flunders impersonating "+user, answerText(a))
		add("GET flunders from the sample-apiserver as the front proxy for "+user, s.asFrontProxy(ctx, user))
	}
	return steps
}

// grantReader lets reader get, list and watch flunders in the test's namespace.
func grantReader(ctx context.Context, s *side) error {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "flunder-reader"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{defaultApiServiceGroupName}, Resources: []string{"flunders"}, Verbs: []string{"get", "list", "watch"}}}}
	if _, err := s.client.RbacV1().Roles(diffNamespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return err
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "flunder-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "flunder-reader"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: reader}}}
	_, err := s.client.RbacV1().RoleBindings(diffNamespace).Create(ctx, binding, metav1.CreateOptions{})
	return err
}

// canI waits (10 s at most) until RBAC lets user list flunders, and says what kubectl said.
func canI(ctx context.Context, s *side, user string) string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := s.kubectl(ctx, "-n", diffNamespace, "auth", "can-i", "list", "flunders."+defaultApiServiceGroupName, "--as", user)
		if err == nil || time.Now().After(deadline) {
			return out + describeErr(err)
		}
		time.Sleep(pollInterval)
	}
}

// asFrontProxy lists flunders from s's sample-apiserver directly, as the aggregator asks it:
// with the front-proxy client certificate, for user in system:authenticated.
func (s *side) asFrontProxy(ctx context.Context, user string) string {
	if s.f.sample == nil {
		return "no sample-apiserver running"
	}
	cert, err := env.proxy.certificate()
	if err != nil {
		return describeErr(err)
	}
	client := s.f.sample.Client(cert)
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, "GET", s.f.sample.URL()+flundersPath, nil)
	if err != nil {
		return describeErr(err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Remote-User", user)
	req.Header.Set("X-Remote-Group", "system:authenticated")
	resp, err := client.Do(req)
	if err != nil {
		return describeErr(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answerText(answer{code: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: b, err: err})
}

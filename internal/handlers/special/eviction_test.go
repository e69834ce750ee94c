package special

import (
	"errors"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/apis/policy"
)

// TestCheckAndDecrement: kube's budget checks, messages and codes, as lapis's eviction makes them.
func TestCheckAndDecrement(t *testing.T) {
	budget := func(gen, observed int64, allowed, current, desired int32, conds ...metav1.Condition) policyv1.PodDisruptionBudget {
		return policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: gen},
			Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: observed, DisruptionsAllowed: allowed,
				CurrentHealthy: current, DesiredHealthy: desired, Conditions: conds},
		}
	}
	for _, tc := range []struct {
		name      string
		pdb       policyv1.PodDisruptionBudget
		code      int32
		cause     string
		retryAfer int32
	}{
		{"not processed yet", budget(2, 1, 1, 2, 1), 429, "The disruption budget b is still being processed by the server.", 10},
		{"negative", budget(1, 1, -1, 2, 1), 403, "The disruption budget b does not allow evicting pods currently: pdb disruptions allowed is negative", 0},
		{"too few healthy", budget(1, 1, 0, 1, 1), 429, "The disruption budget b needs 1 healthy pods and has 1 currently", 0},
		{"sync failed", budget(1, 1, 0, 3, 1, metav1.Condition{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse, Reason: policyv1.SyncFailedReason, Message: "boom"}), 429,
			"The disruption budget b does not allow evicting pods currently because it failed sync: boom", 0},
		{"otherwise", budget(1, 1, 0, 3, 1), 429, "The disruption budget b does not allow evicting pods currently", 0},
		{"allowed (dry run)", budget(1, 1, 1, 3, 1), 0, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (&evicter{}).checkAndDecrement("p", tc.pdb, true)
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			var status apierrors.APIStatus
			if !errors.As(err, &status) {
				t.Fatalf("got %v, want an API error", err)
			}
			s := status.Status()
			if s.Code != tc.code || s.Details == nil || len(s.Details.Causes) != 1 || s.Details.Causes[0].Message != tc.cause ||
				s.Details.Causes[0].Type != policyv1.DisruptionBudgetCause || s.Details.RetryAfterSeconds != tc.retryAfer {
				t.Errorf("got %+v", s)
			}
		})
	}
}

// TestPropagateDryRun: the request's dry-run and the eviction's must agree; a mismatch is a 400
// (kube answers 500).
func TestPropagateDryRun(t *testing.T) {
	all := []string{metav1.DryRunAll}
	for _, tc := range []struct {
		name    string
		body    *metav1.DeleteOptions
		query   []string
		want    []string
		wantErr bool
	}{
		{"none", nil, nil, nil, false},
		{"query only", nil, all, all, false},
		{"body only", &metav1.DeleteOptions{DryRun: all}, nil, all, false},
		{"both agree", &metav1.DeleteOptions{DryRun: all}, all, all, false},
		{"both disagree", &metav1.DeleteOptions{DryRun: []string{"x"}}, all, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := propagateDryRun(&policy.Eviction{DeleteOptions: tc.body}, &metav1.CreateOptions{DryRun: tc.query})
			if tc.wantErr {
				if !apierrors.IsBadRequest(err) {
					t.Fatalf("got %v, want a 400", err)
				}
				return
			}
			if err != nil || len(opts.DryRun) != len(tc.want) {
				t.Errorf("got %v %v, want dry-run %v", opts, err, tc.want)
			}
		})
	}
}

package clientgo

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/poll"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionregistrationv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestAdmissionPolicies: kube's CEL admission policies on lapis, answers compared with
// kube-apiserver 1.37's. A ValidatingAdmissionPolicy bound with Deny refuses with its message
// (422 Invalid, the default reason) or its messageExpression over params (a ConfigMap named by
// the binding's paramRef); bound with Warn (and Audit) it warns, also alongside a denial; a
// MutatingAdmissionPolicy (GA, on by default in 1.37) applies its apply configuration; and a
// policy whose expression does not type-check gets kube-controller-manager's
// status.typeChecking.
func TestAdmissionPolicies(t *testing.T) {
	cs := clientset(t, servers.stable)
	ns := namespace(t, cs)
	ctx := ctxFor(t, time.Minute)
	ar := cs.AdmissionregistrationV1()
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap("limits", map[string]string{"max": "3"}, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	admissionPoliciesFor(ns).install(t, ctx, ar)

	warnings := &warningLog{}
	cfg := rest.CopyConfig(servers.stable)
	cfg.WarningHandler = warnings
	cms := clientset(t, cfg).CoreV1().ConfigMaps(ns)
	labels := map[string]string{testLabel: "yes"}
	// Policies are read through informers, as kube-apiserver reads them: wait for them.
	poll.Eventually(t, 20*time.Second, "the policies in force", func() (bool, string) {
		_, err := cms.Create(ctx, configMap("probe", map[string]string{"color": "red"}, labels), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, "red admitted"
	})
	poll.Eventually(t, 20*time.Second, "the mutating policy in force", func() (bool, string) {
		cm, err := cms.Create(ctx, configMap("probe", nil, labels), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && cm.Labels["mutated"] == "by-policy", fmt.Sprint(err)
	})
	warnings.take()

	checkPolicyDecisions(t, ctx, cms, ns, labels, warnings)
	checkPolicyTypeChecking(t, ctx, ar, ns)
}

// admissionPolicies is TestAdmissionPolicies's policies and bindings, named for its namespace.
type admissionPolicies struct {
	validating      []*admissionregistrationv1.ValidatingAdmissionPolicy
	bindings        []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	mutating        *admissionregistrationv1.MutatingAdmissionPolicy
	mutatingBinding *admissionregistrationv1.MutatingAdmissionPolicyBinding
}

// admissionPoliciesFor makes, for the test's labelled ConfigMaps in ns, validating policies
// that deny red, warn of green and limit the keys to a parameter ConfigMap's max, one that
// type checking finds wrong, and a mutating policy that adds a label.
func admissionPoliciesFor(ns string) *admissionPolicies {
	nsSel, objSel := testSelectors(ns)
	configMaps := admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
		}}}}
	vap := func(name string, paramKind *admissionregistrationv1.ParamKind, validations ...admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
		return &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + ns},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				ParamKind: paramKind, MatchConstraints: configMaps.DeepCopy(), Validations: validations}}
	}
	binding := func(name string, paramRef *admissionregistrationv1.ParamRef, actions ...admissionregistrationv1.ValidationAction) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-binding-" + ns},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name + "-" + ns, ParamRef: paramRef,
				ValidationActions: actions, MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: nsSel, ObjectSelector: objSel}}}
	}
	policies := []*admissionregistrationv1.ValidatingAdmissionPolicy{
		vap("no-red", nil, admissionregistrationv1.Validation{
			Expression: "!has(object.data) || !('color' in object.data) || object.data.color != 'red'", Message: "red is not allowed"}),
		vap("no-green", nil, admissionregistrationv1.Validation{
			Expression: "!has(object.data) || !('color' in object.data) || object.data.color != 'green'", Message: "green is discouraged"}),
		vap("max-keys", &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}, admissionregistrationv1.Validation{
			Expression:        "!has(object.data) || object.data.size() <= int(params.data.max)",
			MessageExpression: "'at most ' + params.data.max + ' keys in ' + object.metadata.name"}),
		// Matches Deployments (none are written here): only its status is looked at.
		{ObjectMeta: metav1.ObjectMeta{Name: "mistyped-" + ns}, Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas == 'three'"}}}},
	}
	bindings := []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		binding("no-red", nil, admissionregistrationv1.Deny),
		binding("no-green", nil, admissionregistrationv1.Warn, admissionregistrationv1.Audit),
		binding("max-keys", &admissionregistrationv1.ParamRef{Name: "limits", Namespace: ns,
			ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}, admissionregistrationv1.Deny),
	}
	mutating := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "label-" + ns},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchConstraints: configMaps.DeepCopy(),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
					Expression: `Object{metadata: Object.metadata{labels: {"mutated": "by-policy"}}}`}}},
		}}
	mutatingBinding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "label-binding-" + ns},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: mutating.Name,
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: nsSel, ObjectSelector: objSel}}}

	return &admissionPolicies{validating: policies, bindings: bindings, mutating: mutating, mutatingBinding: mutatingBinding}
}

// install creates the policies and their bindings, deleted when the test ends.
func (p *admissionPolicies) install(t *testing.T, ctx context.Context, ar admissionregistrationv1client.AdmissionregistrationV1Interface) {
	for _, vap := range p.validating {
		if _, err := ar.ValidatingAdmissionPolicies().Create(ctx, vap, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range p.bindings {
		if _, err := ar.ValidatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ar.MutatingAdmissionPolicies().Create(ctx, p.mutating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ar.MutatingAdmissionPolicyBindings().Create(ctx, p.mutatingBinding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := ctxFor(t, 10*time.Second)
		for _, b := range p.bindings {
			_ = ar.ValidatingAdmissionPolicyBindings().Delete(bg, b.Name, metav1.DeleteOptions{})
		}
		for _, vap := range p.validating {
			_ = ar.ValidatingAdmissionPolicies().Delete(bg, vap.Name, metav1.DeleteOptions{})
		}
		_ = ar.MutatingAdmissionPolicyBindings().Delete(bg, p.mutatingBinding.Name, metav1.DeleteOptions{})
		_ = ar.MutatingAdmissionPolicies().Delete(bg, p.mutating.Name, metav1.DeleteOptions{})
	})
}

// checkPolicyDecisions writes ConfigMaps the policies admit, mutate, deny and warn of.
func checkPolicyDecisions(t *testing.T, ctx context.Context, cms typedcorev1.ConfigMapInterface, ns string, labels map[string]string, warnings *warningLog) {
	// Admitted, and mutated by the MutatingAdmissionPolicy.
	cm, err := cms.Create(ctx, configMap("blue", map[string]string{"color": "blue"}, labels), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if cm.Labels["mutated"] != "by-policy" {
		t.Errorf("labels %v: the MutatingAdmissionPolicy's apply configuration not applied", cm.Labels)
	}
	if got := warnings.take(); len(got) != 0 {
		t.Errorf("warnings %q on an admitted write", got)
	}

	// Deny: kube's answer, word for word.
	denied := func(err error, name, message string) {
		t.Helper()
		s := expectStatus(t, err, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid,
			fmt.Sprintf(`configmaps %q is forbidden: %s`, name, message))
		if s.Details == nil || s.Details.Name != name || s.Details.Kind != "configmaps" ||
			!reflect.DeepEqual(s.Details.Causes, []metav1.StatusCause{{Message: message}}) {
			t.Errorf("status details %+v", s.Details)
		}
	}
	_, err = cms.Create(ctx, configMap("red", map[string]string{"color": "red"}, labels), metav1.CreateOptions{})
	denied(err, "red", fmt.Sprintf(`ValidatingAdmissionPolicy 'no-red-%[1]s' with binding 'no-red-binding-%[1]s' denied request: red is not allowed`, ns))
	cm.Data["color"] = "red"
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	denied(err, "blue", fmt.Sprintf(`ValidatingAdmissionPolicy 'no-red-%[1]s' with binding 'no-red-binding-%[1]s' denied request: red is not allowed`, ns))
	// Params: the binding's ConfigMap says at most 3 keys.
	_, err = cms.Create(ctx, configMap("many", map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}, labels), metav1.CreateOptions{})
	denied(err, "many", fmt.Sprintf(`ValidatingAdmissionPolicy 'max-keys-%[1]s' with binding 'max-keys-binding-%[1]s' denied request: at most 3 keys in many`, ns))
	warnings.take()

	// Warn: admitted with a warning; alongside a denial, the warning comes with it (as kube).
	warnGreen := fmt.Sprintf(`Validation failed for ValidatingAdmissionPolicy 'no-green-%[1]s' with binding 'no-green-binding-%[1]s': green is discouraged`, ns)
	if _, err := cms.Create(ctx, configMap("green", map[string]string{"color": "green"}, labels), metav1.CreateOptions{}); err != nil {
		t.Errorf("create green: %v", err)
	}
	if got := warnings.take(); !slices.Equal(got, []string{warnGreen}) {
		t.Errorf("warnings %q, want %q", got, warnGreen)
	}
	_, err = cms.Create(ctx, configMap("green-many", map[string]string{"color": "green", "a": "1", "b": "2", "c": "3"}, labels), metav1.CreateOptions{})
	denied(err, "green-many", fmt.Sprintf(`ValidatingAdmissionPolicy 'max-keys-%[1]s' with binding 'max-keys-binding-%[1]s' denied request: at most 3 keys in green-many`, ns))
	if got := warnings.take(); !slices.Equal(got, []string{warnGreen}) {
		t.Errorf("warnings with the denial %q, want %q", got, warnGreen)
	}

	// Objects the bindings do not select are left alone.
	if plain, err := cms.Create(ctx, configMap("plain", map[string]string{"color": "red"}, nil), metav1.CreateOptions{}); err != nil || plain.Labels["mutated"] != "" {
		t.Errorf("a ConfigMap without the test's label: %v, labels %v", err, plain.Labels)
	}
}

// checkPolicyTypeChecking: kube-controller-manager's status controller, kube's warning.
func checkPolicyTypeChecking(t *testing.T, ctx context.Context, ar admissionregistrationv1client.AdmissionregistrationV1Interface, ns string) {
	want := admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: 1, TypeChecking: &admissionregistrationv1.TypeChecking{
		ExpressionWarnings: []admissionregistrationv1.ExpressionWarning{{FieldRef: "spec.validations[0].expression",
			Warning: "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_==_' applied to '(int, string)'\n | object.spec.replicas == 'three'\n | .....................^\n"}}}}
	poll.Eventually(t, 20*time.Second, "the mistyped policy's status.typeChecking", func() (bool, string) {
		p, err := ar.ValidatingAdmissionPolicies().Get(ctx, "mistyped-"+ns, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return reflect.DeepEqual(p.Status.ObservedGeneration, want.ObservedGeneration) && reflect.DeepEqual(p.Status.TypeChecking, want.TypeChecking),
			fmt.Sprintf("status %+v", p.Status)
	})
	// A well-typed policy: no warnings. (kube-apiserver keeps no typeChecking at all from the
	// controller's empty one; that is server-side apply's business, not admission's.)
	poll.Eventually(t, 20*time.Second, "a well-typed policy's status", func() (bool, string) {
		p, err := ar.ValidatingAdmissionPolicies().Get(ctx, "no-red-"+ns, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		tc := p.Status.TypeChecking
		return p.Status.ObservedGeneration == 1 && (tc == nil || len(tc.ExpressionWarnings) == 0), fmt.Sprintf("status %+v", p.Status)
	})
}

// TestAdmissionPolicyOnDelete: deletes go through admission as in kube-apiserver: a
// ValidatingAdmissionPolicy for DELETE sees the object as oldObject and refuses with kube's
// answer; a delete it admits goes through.
func TestAdmissionPolicyOnDelete(t *testing.T) {
	cs := clientset(t, servers.stable)
	ns := namespace(t, cs)
	ctx := ctxFor(t, time.Minute)
	nsSel, objSel := testSelectors(ns)
	ar := cs.AdmissionregistrationV1()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "keep-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "!has(oldObject.data) || !('keep' in oldObject.data)", Message: "kept"}}}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "keep-binding-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: nsSel, ObjectSelector: objSel}}}
	if _, err := ar.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ar.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := ctxFor(t, 10*time.Second)
		_ = ar.ValidatingAdmissionPolicyBindings().Delete(bg, binding.Name, metav1.DeleteOptions{})
		_ = ar.ValidatingAdmissionPolicies().Delete(bg, policy.Name, metav1.DeleteOptions{})
	})
	cms := cs.CoreV1().ConfigMaps(ns)
	labels := map[string]string{testLabel: "yes"}
	for _, name := range []string{"kept", "gone"} {
		data := map[string]string{"keep": "1"}
		if name == "gone" {
			data = map[string]string{"other": "1"}
		}
		if _, err := cms.Create(ctx, configMap(name, data, labels), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	message := fmt.Sprintf(`ValidatingAdmissionPolicy 'keep-%[1]s' with binding 'keep-binding-%[1]s' denied request: kept`, ns)
	var err error
	poll.Eventually(t, 20*time.Second, "the policy in force", func() (bool, string) {
		err = cms.Delete(ctx, "kept", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, "the delete was admitted"
	})
	err = cms.Delete(ctx, "kept", metav1.DeleteOptions{})
	s := expectStatus(t, err, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, fmt.Sprintf(`configmaps "kept" is forbidden: %s`, message))
	if s.Details == nil || s.Details.Name != "kept" || !reflect.DeepEqual(s.Details.Causes, []metav1.StatusCause{{Message: message}}) {
		t.Errorf("status details %+v", s.Details)
	}
	if _, err := cms.Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("the refused delete removed the object: %v", err)
	}
	if err := cms.Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Errorf("a delete the policy admits: %v", err)
	}
}

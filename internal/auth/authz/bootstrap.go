package authz

import (
	"context"
	"fmt"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

// policy is what kube-apiserver's RBAC post-start hook reconciles (its RESTStorageProvider's
// PolicyData): kube-apiserver's and kube-controller-manager's roles and bindings.
type policy struct {
	clusterRoles        []rbacv1.ClusterRole
	clusterRoleBindings []rbacv1.ClusterRoleBinding
	roles               map[string][]rbacv1.Role
	roleBindings        map[string][]rbacv1.RoleBinding
	toAggregate         map[string]string                    // old ClusterRole name → new
	toSplit             map[string]rbacv1.ClusterRoleBinding // old ClusterRoleBinding name → new
}

func bootstrapPolicy() policy {
	return policy{
		clusterRoles:        append(bootstrappolicy.ClusterRoles(), bootstrappolicy.ControllerRoles()...),
		clusterRoleBindings: append(bootstrappolicy.ClusterRoleBindings(), bootstrappolicy.ControllerRoleBindings()...),
		roles:               bootstrappolicy.NamespaceRoles(),
		roleBindings:        bootstrappolicy.NamespaceRoleBindings(),
		toAggregate:         bootstrappolicy.ClusterRolesToAggregate(),
		toSplit:             bootstrappolicy.ClusterRoleBindingsToSplit(),
	}
}

// pollInterval is kube's hook's.
const pollInterval = time.Second

// EnsureBootstrapPolicy creates or reconciles kube's bootstrap roles and bindings through client
// (a system:masters client of lapis) as kube-apiserver's rbac/bootstrap-roles post-start hook
// does: missing rules, subjects, labels and annotations are added, nothing is removed, and
// objects annotated rbac.authorization.kubernetes.io/autoupdate=false are left alone. It tries
// every second until everything is reconciled (kube gives up after 30 s: bound ctx so) and
// returns ctx's end with the last failure. Logs go to ctx's klog logger.
func EnsureBootstrapPolicy(ctx context.Context, client kubernetes.Interface) error {
	p := bootstrapPolicy()
	var last error
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		last = p.ensure(ctx, client)
		return last == nil, nil
	})
	if err != nil {
		if last == nil {
			last = err
		}
		return fmt.Errorf("unable to initialize roles: %w", last)
	}
	return nil
}

// ensure is one pass of kube's ensureRBACPolicy: it reconciles as many objects as it can and
// reports what failed. What exists is listed once, and read again only when a write races.
func (p policy) ensure(ctx context.Context, client kubernetes.Interface) error {
	log := klog.FromContext(ctx)
	rbac := client.RbacV1()
	// Lists first, as kube makes sure storage answers before it reconciles.
	crs, err := rbac.ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("unable to initialize clusterroles: %w", err)
	}
	crbs, err := rbac.ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("unable to initialize clusterrolebindings: %w", err)
	}
	rs, err := rbac.Roles(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("unable to initialize roles: %w", err)
	}
	rbs, err := rbac.RoleBindings(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("unable to initialize rolebindings: %w", err)
	}
	clusterRoles := &clusterRoleModifier{reconciliation.ClusterRoleModifier{Client: rbac.ClusterRoles()}, newListed(crs.Items)}
	clusterRoleBindings := &clusterRoleBindingModifier{reconciliation.ClusterRoleBindingClientAdapter{Client: rbac.ClusterRoleBindings()}, newListed(crbs.Items)}
	roles := &roleModifier{reconciliation.RoleModifier{Client: rbac, NamespaceClient: client.CoreV1().Namespaces()}, newListed(rs.Items)}
	roleBindings := &roleBindingModifier{reconciliation.RoleBindingClientAdapter{Client: rbac, NamespaceClient: client.CoreV1().Namespaces()}, newListed(rbs.Items)}

	if err := p.primeAggregated(ctx, client, clusterRoles.listed); err != nil {
		return fmt.Errorf("unable to prime aggregated clusterroles: %w", err)
	}
	if err := p.primeSplit(ctx, client, clusterRoleBindings.listed); err != nil {
		return fmt.Errorf("unable to prime split ClusterRoleBindings: %w", err)
	}

	// Failures do not stop the pass: as many objects as possible are reconciled. Objects are
	// independent, so they are reconciled a few at a time: a first start writes some 140.
	var jobs []func() error
	for i := range p.clusterRoles {
		role := &p.clusterRoles[i]
		jobs = append(jobs, func() error {
			opts := reconciliation.ReconcileRoleOptions{
				Role: reconciliation.ClusterRoleRuleOwner{ClusterRole: role.DeepCopy()}, Client: clusterRoles, Confirm: true,
			}
			return reconcileRole(log, &opts, "clusterrole", "", role.Name)
		})
	}
	for i := range p.clusterRoleBindings {
		binding := &p.clusterRoleBindings[i]
		jobs = append(jobs, func() error {
			opts := reconciliation.ReconcileRoleBindingOptions{
				RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: binding.DeepCopy()}, Client: clusterRoleBindings, Confirm: true,
			}
			return reconcileBinding(log, &opts, "clusterrolebinding", "", binding.Name)
		})
	}
	for ns, list := range p.roles {
		for i := range list {
			jobs = append(jobs, func() error {
				opts := reconciliation.ReconcileRoleOptions{
					Role: reconciliation.RoleRuleOwner{Role: list[i].DeepCopy()}, Client: roles, Confirm: true,
				}
				return reconcileRole(log, &opts, "role", ns, list[i].Name)
			})
		}
	}
	for ns, list := range p.roleBindings {
		for i := range list {
			jobs = append(jobs, func() error {
				opts := reconciliation.ReconcileRoleBindingOptions{
					RoleBinding: reconciliation.RoleBindingAdapter{RoleBinding: list[i].DeepCopy()}, Client: roleBindings, Confirm: true,
				}
				return reconcileBinding(log, &opts, "rolebinding", ns, list[i].Name)
			})
		}
	}
	var (
		mu     sync.Mutex
		failed []error
		wg     sync.WaitGroup
		slots  = make(chan struct{}, reconcileParallelism)
	)
	for _, job := range jobs {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := job(); err != nil {
				mu.Lock()
				failed = append(failed, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return utilerrors.NewAggregate(failed)
}

// reconcileParallelism is how many objects are reconciled at once.
const reconcileParallelism = 16

// retryable is kube's: conflicts, and storage not yet ready.
func retryable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsServiceUnavailable(err)
}

func reconcileRole(log klog.Logger, opts *reconciliation.ReconcileRoleOptions, kind, ns, name string) error {
	err := retry.OnError(retry.DefaultBackoff, retryable, func() error {
		result, err := opts.Run()
		if err != nil {
			return err
		}
		switch {
		case result.Protected && result.Operation != reconciliation.ReconcileNone:
			log.Info("skipped reconcile-protected "+kind+" with missing permissions", "name", name, "namespace", ns, "missing", result.MissingRules)
		case result.Operation == reconciliation.ReconcileUpdate:
			log.V(2).Info("updated "+kind+" with additional permissions", "name", name, "namespace", ns, "missing", result.MissingRules)
		case result.Operation == reconciliation.ReconcileCreate:
			log.V(2).Info("created "+kind, "name", name, "namespace", ns)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("unable to reconcile %s.%s/%s%s: %w", kind, rbacv1.GroupName, name, inNamespace(ns), err)
	}
	return nil
}

func reconcileBinding(log klog.Logger, opts *reconciliation.ReconcileRoleBindingOptions, kind, ns, name string) error {
	err := retry.OnError(retry.DefaultBackoff, retryable, func() error {
		result, err := opts.Run()
		if err != nil {
			return err
		}
		switch {
		case result.Protected && result.Operation != reconciliation.ReconcileNone:
			log.Info("skipped reconcile-protected "+kind+" with missing subjects", "name", name, "namespace", ns, "missing", result.MissingSubjects)
		case result.Operation == reconciliation.ReconcileUpdate:
			log.V(2).Info("updated "+kind+" with additional subjects", "name", name, "namespace", ns, "missing", result.MissingSubjects)
		case result.Operation == reconciliation.ReconcileCreate:
			log.V(2).Info("created "+kind, "name", name, "namespace", ns)
		case result.Operation == reconciliation.ReconcileRecreate:
			log.V(2).Info("recreated "+kind, "name", name, "namespace", ns)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("unable to reconcile %s.%s/%s%s: %w", kind, rbacv1.GroupName, name, inNamespace(ns), err)
	}
	return nil
}

func inNamespace(ns string) string {
	if ns == "" {
		return ""
	}
	return " in " + ns
}

// primeAggregated is kube's primeAggregatedClusterRoles: a role that became aggregated (admin,
// edit, view) keeps the rules someone added to it, under its aggregated-to name.
func (p policy) primeAggregated(ctx context.Context, client kubernetes.Interface, listed *listed[rbacv1.ClusterRole]) error {
	for oldName, newName := range p.toAggregate {
		if listed.has("", newName) {
			continue
		}
		existing, ok := listed.items[key("", oldName)]
		if !ok {
			continue
		}
		if existing.AggregationRule != nil {
			// As kube: already migrated, so nothing else to migrate either.
			return nil
		}
		migrated := existing.DeepCopy()
		migrated.Name = newName
		migrated.ResourceVersion = ""
		klog.FromContext(ctx).V(1).Info("migrating clusterrole", "from", oldName, "to", newName)
		if _, err := client.RbacV1().ClusterRoles().Create(ctx, migrated, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// primeSplit is kube's primeSplitClusterRoleBindings: a binding split in two gives the new one
// its subjects, labels and annotations.
func (p policy) primeSplit(ctx context.Context, client kubernetes.Interface, listed *listed[rbacv1.ClusterRoleBinding]) error {
	for oldName, template := range p.toSplit {
		existing, ok := listed.items[key("", oldName)]
		if !ok || listed.has("", template.Name) {
			continue
		}
		split := template.DeepCopy()
		split.Subjects = existing.Subjects
		split.Labels = existing.Labels
		split.Annotations = existing.Annotations
		klog.FromContext(ctx).V(1).Info("copying subjects, labels, and annotations", "from", oldName, "to", template.Name)
		if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, split, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// listed answers the first Get of each object from one list; later Gets (a retry after a
// conflict or a lost race) ask the server.
type listed[T any] struct {
	mu    sync.Mutex
	items map[string]*T
	asked map[string]bool
}

func newListed[T any, PT interface {
	*T
	GetNamespace() string
	GetName() string
}](items []T) *listed[T] {
	l := &listed[T]{items: make(map[string]*T, len(items)), asked: map[string]bool{}}
	for i := range items {
		item := PT(&items[i])
		l.items[key(item.GetNamespace(), item.GetName())] = &items[i]
	}
	return l
}

func key(ns, name string) string { return ns + "/" + name }

func (l *listed[T]) has(ns, name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.items[key(ns, name)]
	return ok
}

// take answers from the list (item nil when absent) the first time ns/name is asked; ok is
// false afterwards.
func (l *listed[T]) take(ns, name string) (item *T, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := key(ns, name)
	if l.asked[k] {
		return nil, false
	}
	l.asked[k] = true
	return l.items[k], true
}

// The modifiers are kube's reconciliation client adapters, answering each object's first Get
// from the pass's list (a restart then reads four lists, not one object at a time).

type clusterRoleModifier struct {
	reconciliation.ClusterRoleModifier
	listed *listed[rbacv1.ClusterRole]
}

func (m *clusterRoleModifier) Get(ns, name string) (reconciliation.RuleOwner, error) {
	if r, ok := m.listed.take("", name); ok {
		if r == nil {
			return nil, apierrors.NewNotFound(rbacv1.Resource("clusterroles"), name)
		}
		return reconciliation.ClusterRoleRuleOwner{ClusterRole: r.DeepCopy()}, nil
	}
	return m.ClusterRoleModifier.Get(ns, name)
}

type clusterRoleBindingModifier struct {
	reconciliation.ClusterRoleBindingClientAdapter
	listed *listed[rbacv1.ClusterRoleBinding]
}

func (m *clusterRoleBindingModifier) Get(ns, name string) (reconciliation.RoleBinding, error) {
	if b, ok := m.listed.take("", name); ok {
		if b == nil {
			return nil, apierrors.NewNotFound(rbacv1.Resource("clusterrolebindings"), name)
		}
		return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b.DeepCopy()}, nil
	}
	return m.ClusterRoleBindingClientAdapter.Get(ns, name)
}

type roleModifier struct {
	reconciliation.RoleModifier // creates a role's namespace when missing, as kube's hook does
	listed                      *listed[rbacv1.Role]
}

func (m *roleModifier) Get(ns, name string) (reconciliation.RuleOwner, error) {
	if r, ok := m.listed.take(ns, name); ok {
		if r == nil {
			return nil, apierrors.NewNotFound(rbacv1.Resource("roles"), name)
		}
		return reconciliation.RoleRuleOwner{Role: r.DeepCopy()}, nil
	}
	return m.RoleModifier.Get(ns, name)
}

type roleBindingModifier struct {
	reconciliation.RoleBindingClientAdapter
	listed *listed[rbacv1.RoleBinding]
}

func (m *roleBindingModifier) Get(ns, name string) (reconciliation.RoleBinding, error) {
	if b, ok := m.listed.take(ns, name); ok {
		if b == nil {
			return nil, apierrors.NewNotFound(rbacv1.Resource("rolebindings"), name)
		}
		return reconciliation.RoleBindingAdapter{RoleBinding: b.DeepCopy()}, nil
	}
	return m.RoleBindingClientAdapter.Get(ns, name)
}

package authz

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
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

// Creator creates obj, an object of resource (ClusterRoles, ClusterRoleBindings, Roles or
// RoleBindings of rbac.authorization.k8s.io/v1) in namespace ("" for cluster-scoped ones), as
// the client's POST would store it. lapis gives its objects service's create path: the first
// start then makes no request per object. Errors are API errors, as the client's.
type Creator func(ctx context.Context, resource schema.GroupVersionResource, namespace string, obj *unstructured.Unstructured) error

// EnsureBootstrapPolicy creates or reconciles kube's bootstrap roles and bindings through client
// (a system:masters client of lapis) as kube-apiserver's rbac/bootstrap-roles post-start hook
// does: missing rules, subjects, labels and annotations are added, nothing is removed, and
// objects annotated rbac.authorization.kubernetes.io/autoupdate=false are left alone. It tries
// every second until everything is reconciled (kube gives up after 30 s: bound ctx so) and
// returns ctx's end with the last failure. Logs go to ctx's klog logger.
//
// When create is not nil and no Role, ClusterRole or binding is stored yet (a first start), the
// objects are created through it instead of the client; reads, updates and any later pass use
// the client.
func EnsureBootstrapPolicy(ctx context.Context, client kubernetes.Interface, create Creator) error {
	p := bootstrapPolicy()
	var last error
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		last = p.ensure(ctx, client, create)
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
func (p policy) ensure(ctx context.Context, client kubernetes.Interface, create Creator) error {
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
	// A first start creates every object: through create, without a request each, when given.
	var d *direct
	if create != nil && len(crs.Items)+len(crbs.Items)+len(rs.Items)+len(rbs.Items) == 0 {
		d = &direct{ctx: ctx, create: create, namespaces: client.CoreV1().Namespaces(), ensured: map[string]bool{}}
	}
	clusterRoles := &clusterRoleModifier{reconciliation.ClusterRoleModifier{Client: rbac.ClusterRoles()}, newListed(crs.Items), d}
	clusterRoleBindings := &clusterRoleBindingModifier{reconciliation.ClusterRoleBindingClientAdapter{Client: rbac.ClusterRoleBindings()}, newListed(crbs.Items), d}
	roles := &roleModifier{reconciliation.RoleModifier{Client: rbac, NamespaceClient: client.CoreV1().Namespaces()}, newListed(rs.Items), d}
	roleBindings := &roleBindingModifier{reconciliation.RoleBindingClientAdapter{Client: rbac, NamespaceClient: client.CoreV1().Namespaces()}, newListed(rbs.Items), d}

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
	// A few workers take the jobs in turn: a worker's stack, grown by the write path's deep
	// calls, serves many objects.
	var (
		mu     sync.Mutex
		failed []error
		wg     sync.WaitGroup
		queue  = make(chan func() error)
	)
	for range min(reconcileParallelism, len(jobs)) {
		wg.Go(func() {
			for job := range queue {
				if err := job(); err != nil {
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, job := range jobs {
		queue <- job
	}
	close(queue)
	wg.Wait()
	return utilerrors.NewAggregate(failed)
}

// reconcileParallelism is how many objects are reconciled at once: enough for etcd to commit
// many writes with each disk sync.
const reconcileParallelism = 16

// retryable is kube's: conflicts, and storage not yet ready.
func retryable(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsServiceUnavailable(err)
}

func reconcileRole(log klog.Logger, opts *reconciliation.ReconcileRoleOptions, kind, ns, name string) error {
	return reconcile(log, kind, "permissions", ns, name, func() (reconciled, error) {
		result, err := opts.Run()
		if err != nil {
			return reconciled{}, err
		}
		return reconciled{result.Operation, result.Protected, result.MissingRules}, nil
	})
}

func reconcileBinding(log klog.Logger, opts *reconciliation.ReconcileRoleBindingOptions, kind, ns, name string) error {
	return reconcile(log, kind, "subjects", ns, name, func() (reconciled, error) {
		result, err := opts.Run()
		if err != nil {
			return reconciled{}, err
		}
		return reconciled{result.Operation, result.Protected, result.MissingSubjects}, nil
	})
}

// reconciled is what reconciling a role or a binding did.
type reconciled struct {
	operation reconciliation.ReconcileOperation
	protected bool
	missing   any // the rules or subjects the stored object lacked
}

// reconcile runs one object's reconcile, retried as kube's hook retries it, and logs what it
// did as kube's hook logs it; held is what the object holds: "permissions" or "subjects".
func reconcile(log klog.Logger, kind, held, ns, name string, run func() (reconciled, error)) error {
	err := retry.OnError(retry.DefaultBackoff, retryable, func() error {
		result, err := run()
		if err != nil {
			return err
		}
		switch {
		case result.protected && result.operation != reconciliation.ReconcileNone:
			log.Info("skipped reconcile-protected "+kind+" with missing "+held, "name", name, "namespace", ns, "missing", result.missing)
		case result.operation == reconciliation.ReconcileUpdate:
			log.V(2).Info("updated "+kind+" with additional "+held, "name", name, "namespace", ns, "missing", result.missing)
		case result.operation == reconciliation.ReconcileCreate:
			log.V(2).Info("created "+kind, "name", name, "namespace", ns)
		case result.operation == reconciliation.ReconcileRecreate: // bindings only
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

// fromList answers a modifier's Get of ns/name: from the pass's list the first time it is asked
// (NotFound when the list lacks it, as resource), from the client's get after.
func fromList[T, O any](l *listed[T], resource, ns, name string, get func(ns, name string) (O, error), adapt func(*T) O) (O, error) {
	item, first := l.take(ns, name)
	if !first {
		return get(ns, name)
	}
	if item == nil {
		var none O
		return none, apierrors.NewNotFound(rbacv1.Resource(resource), name)
	}
	return adapt(item), nil
}

type clusterRoleModifier struct {
	reconciliation.ClusterRoleModifier
	listed *listed[rbacv1.ClusterRole]
	direct *direct // nil: creates through the client
}

func (m *clusterRoleModifier) Get(ns, name string) (reconciliation.RuleOwner, error) {
	return fromList(m.listed, "clusterroles", "", name, m.ClusterRoleModifier.Get, func(r *rbacv1.ClusterRole) reconciliation.RuleOwner {
		return reconciliation.ClusterRoleRuleOwner{ClusterRole: r.DeepCopy()}
	})
}

type clusterRoleBindingModifier struct {
	reconciliation.ClusterRoleBindingClientAdapter
	listed *listed[rbacv1.ClusterRoleBinding]
	direct *direct
}

func (m *clusterRoleBindingModifier) Get(ns, name string) (reconciliation.RoleBinding, error) {
	return fromList(m.listed, "clusterrolebindings", "", name, m.ClusterRoleBindingClientAdapter.Get, func(b *rbacv1.ClusterRoleBinding) reconciliation.RoleBinding {
		return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b.DeepCopy()}
	})
}

type roleModifier struct {
	reconciliation.RoleModifier // creates a role's namespace when missing, as kube's hook does
	listed                      *listed[rbacv1.Role]
	direct                      *direct
}

func (m *roleModifier) Get(ns, name string) (reconciliation.RuleOwner, error) {
	return fromList(m.listed, "roles", ns, name, m.RoleModifier.Get, func(r *rbacv1.Role) reconciliation.RuleOwner {
		return reconciliation.RoleRuleOwner{Role: r.DeepCopy()}
	})
}

type roleBindingModifier struct {
	reconciliation.RoleBindingClientAdapter
	listed *listed[rbacv1.RoleBinding]
	direct *direct
}

func (m *roleBindingModifier) Get(ns, name string) (reconciliation.RoleBinding, error) {
	return fromList(m.listed, "rolebindings", ns, name, m.RoleBindingClientAdapter.Get, func(b *rbacv1.RoleBinding) reconciliation.RoleBinding {
		return reconciliation.RoleBindingAdapter{RoleBinding: b.DeepCopy()}
	})
}

func (m *clusterRoleModifier) Create(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	return createThrough(m.direct, clusterRolesResource, in, in.(reconciliation.ClusterRoleRuleOwner).ClusterRole, m.ClusterRoleModifier.Create)
}

func (m *clusterRoleBindingModifier) Create(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	return createThrough(m.direct, clusterRoleBindingsResource, in, in.(reconciliation.ClusterRoleBindingAdapter).ClusterRoleBinding, m.ClusterRoleBindingClientAdapter.Create)
}

func (m *roleModifier) Create(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	return createThrough(m.direct, rolesResource, in, in.(reconciliation.RoleRuleOwner).Role, m.RoleModifier.Create)
}

func (m *roleBindingModifier) Create(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	return createThrough(m.direct, roleBindingsResource, in, in.(reconciliation.RoleBindingAdapter).RoleBinding, m.RoleBindingClientAdapter.Create)
}

// createThrough creates in, whose object is obj: through d when set (a first start), else with
// the client's create.
func createThrough[T any](d *direct, resource schema.GroupVersionResource, in T, obj runtime.Object, create func(T) (T, error)) (T, error) {
	if d == nil {
		return create(in)
	}
	if err := d.store(resource, obj); err != nil {
		var none T
		return none, err
	}
	return in, nil
}

var (
	clusterRolesResource        = rbacv1.SchemeGroupVersion.WithResource("clusterroles")
	clusterRoleBindingsResource = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")
	rolesResource               = rbacv1.SchemeGroupVersion.WithResource("roles")
	roleBindingsResource        = rbacv1.SchemeGroupVersion.WithResource("rolebindings")
)

// kinds are the bootstrap resources' kinds, which kube's templates leave out of their TypeMeta.
var kinds = map[schema.GroupVersionResource]string{
	clusterRolesResource: "ClusterRole", clusterRoleBindingsResource: "ClusterRoleBinding",
	rolesResource: "Role", roleBindingsResource: "RoleBinding",
}

// direct creates a pass's objects through a Creator. The reconciliation package's client
// interfaces take no context: the pass's is kept here.
type direct struct {
	ctx    context.Context
	create Creator
	// As kube's Role and RoleBinding adapters, a namespaced object's namespace is made when
	// missing: asked once per namespace and pass.
	namespaces corev1client.NamespaceInterface
	mu         sync.Mutex
	ensured    map[string]bool
}

// store creates in (a kube template) as resource. What was stored is not decoded back: the
// reconcile only logs the names of what it created.
func (d *direct) store(resource schema.GroupVersionResource, in runtime.Object) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(in)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: content}
	obj.SetGroupVersionKind(resource.GroupVersion().WithKind(kinds[resource]))
	if ns := obj.GetNamespace(); ns != "" {
		if err := d.ensureNamespace(ns); err != nil {
			return err
		}
	}
	return d.create(d.ctx, resource, obj.GetNamespace(), obj)
}

// ensureNamespace is what kube's adapters do before they create a namespaced object (their
// tryEnsureNamespace): a namespace that cannot be read for lack of permission is assumed, one
// missing is created through the client.
func (d *direct) ensureNamespace(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ensured[name] {
		return nil
	}
	_, err := d.namespaces.Get(d.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = d.namespaces.Create(d.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if apierrors.IsForbidden(err) {
		err = nil
	}
	if err == nil {
		d.ensured[name] = true
	}
	return err
}

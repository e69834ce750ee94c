package kube

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	apiregistrationinstall "k8s.io/kube-aggregator/pkg/apis/apiregistration/install"
	"k8s.io/kube-aggregator/pkg/registry/apiservice"
	apiserviceetcd "k8s.io/kube-aggregator/pkg/registry/apiservice/etcd"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingadmissionpolicy"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingadmissionpolicybinding"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingwebhookconfiguration"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/resolver"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicy"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingadmissionpolicybinding"
	"k8s.io/kubernetes/pkg/registry/admissionregistration/validatingwebhookconfiguration"
	"k8s.io/kubernetes/pkg/registry/apps/controllerrevision"
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/apps/replicaset"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"
	"k8s.io/kubernetes/pkg/registry/autoscaling/horizontalpodautoscaler"
	"k8s.io/kubernetes/pkg/registry/batch/cronjob"
	"k8s.io/kubernetes/pkg/registry/batch/job"
	"k8s.io/kubernetes/pkg/registry/certificates/certificates"
	"k8s.io/kubernetes/pkg/registry/certificates/clustertrustbundle"
	"k8s.io/kubernetes/pkg/registry/certificates/podcertificaterequest"
	"k8s.io/kubernetes/pkg/registry/coordination/lease"
	"k8s.io/kubernetes/pkg/registry/core/configmap"
	"k8s.io/kubernetes/pkg/registry/core/endpoint"
	"k8s.io/kubernetes/pkg/registry/core/event"
	"k8s.io/kubernetes/pkg/registry/core/limitrange"
	"k8s.io/kubernetes/pkg/registry/core/namespace"
	"k8s.io/kubernetes/pkg/registry/core/node"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolume"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/podtemplate"
	"k8s.io/kubernetes/pkg/registry/core/replicationcontroller"
	"k8s.io/kubernetes/pkg/registry/core/resourcequota"
	"k8s.io/kubernetes/pkg/registry/core/secret"
	"k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/core/serviceaccount"
	"k8s.io/kubernetes/pkg/registry/discovery/endpointslice"
	"k8s.io/kubernetes/pkg/registry/flowcontrol/flowschema"
	"k8s.io/kubernetes/pkg/registry/flowcontrol/prioritylevelconfiguration"
	"k8s.io/kubernetes/pkg/registry/networking/ingress"
	"k8s.io/kubernetes/pkg/registry/networking/ingressclass"
	"k8s.io/kubernetes/pkg/registry/networking/ipaddress"
	"k8s.io/kubernetes/pkg/registry/networking/networkpolicy"
	"k8s.io/kubernetes/pkg/registry/networking/servicecidr"
	"k8s.io/kubernetes/pkg/registry/node/runtimeclass"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrole"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrolebinding"
	"k8s.io/kubernetes/pkg/registry/rbac/role"
	"k8s.io/kubernetes/pkg/registry/rbac/rolebinding"
	"k8s.io/kubernetes/pkg/registry/resource/deviceclass"
	"k8s.io/kubernetes/pkg/registry/resource/devicetaintrule"
	"k8s.io/kubernetes/pkg/registry/resource/resourceclaim"
	"k8s.io/kubernetes/pkg/registry/resource/resourceclaimtemplate"
	"k8s.io/kubernetes/pkg/registry/resource/resourceslice"
	"k8s.io/kubernetes/pkg/registry/scheduling/priorityclass"
	"k8s.io/kubernetes/pkg/registry/storage/csidriver"
	"k8s.io/kubernetes/pkg/registry/storage/csinode"
	"k8s.io/kubernetes/pkg/registry/storage/csistoragecapacity"
	"k8s.io/kubernetes/pkg/registry/storage/storageclass"
	"k8s.io/kubernetes/pkg/registry/storage/volumeattachment"
	"k8s.io/kubernetes/pkg/registry/storage/volumeattributesclass"
	"k8s.io/kubernetes/pkg/registry/storagemigration/storagemigration"

	// Every group kube-apiserver serves: types, defaults and conversions in legacyscheme.
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/authentication/install"
	_ "k8s.io/kubernetes/pkg/apis/authorization/install"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"
	_ "k8s.io/kubernetes/pkg/apis/coordination/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/discovery/install"
	_ "k8s.io/kubernetes/pkg/apis/events/install"
	_ "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	_ "k8s.io/kubernetes/pkg/apis/node/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
	_ "k8s.io/kubernetes/pkg/apis/storagemigration/install"
)

// attrsFunc is a strategy package's GetAttrs: the labels and selectable fields of an object.
type attrsFunc = func(runtime.Object) (labels.Set, fields.Set, error)

// strategies is how kube-apiserver treats one resource, whatever version it is served at: the
// registry strategies of its endpoints and its field-selector attributes.
type strategies struct {
	main rest.RESTCreateUpdateStrategy
	// sub are the update strategies of subresources that write the object (status, ...).
	sub   map[string]rest.RESTUpdateStrategy
	attrs attrsFunc
	// defaultTable: kube's REST storage answers Tables with the default columns (Name, Created
	// At), not a printer; table, when set, is the type's own convertor.
	defaultTable bool
	table        rest.TableConvertor
	// returnsDeleted: DELETE answers with the object, as these types' REST storage does.
	returnsDeleted bool
	// deleteWarning is what kube's REST storage warns of on a delete without a propagation
	// policy (Jobs orphan their Pods by default).
	deleteWarning string
	// admission is the chain of the process (nil: none).
	admission func() admission.Interface
	// objects are the admission ObjectInterfaces of the catalogue's built-in types.
	objects admission.ObjectInterfaces
	// checkWrite is Deps.CheckWrite.
	checkWrite func(ctx context.Context, obj, old runtime.Object) error
	// storedAs names the resource whose objects these are, when another one (core events for
	// events.k8s.io events, as kube's cohabitating resources).
	storedAs *schema.GroupResource
	// ttl is how long objects are kept after each write, as the TTLFunc of the type's REST
	// storage (0: until deleted).
	ttl time.Duration
}

// Deps are what some of kube's strategies consult beyond the object: an authorizer (nil allows
// everything, as kube's strategies take it), namespaces and a kind-to-resource resolver.
type Deps struct {
	// Admission is the admission chain (nil: none), run where kube-apiserver runs it.
	Admission  func() admission.Interface
	Authorizer authorizer.Authorizer
	Namespace  func(ctx context.Context, name string) (*corev1.Namespace, error)
	Resolve    func(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error)
	// EventTTL is kube-apiserver's --event-ttl, the TTL its event REST storage
	// (pkg/registry/core/event/storage) gives Events of both groups: 0 keeps them until
	// deleted.
	EventTTL time.Duration
	// CheckWrite, when set, is asked about every create and update of a resource (not its
	// subresources) before admission, with the object (and on update the stored one, else nil)
	// at the internal version: the checks kube's REST storage makes of some types itself
	// (RBAC's escalation checks).
	CheckWrite func(ctx context.Context, obj, old runtime.Object) error
}

// status is a strategies.sub with only a status subresource.
func status(s rest.RESTUpdateStrategy) map[string]rest.RESTUpdateStrategy {
	return map[string]rest.RESTUpdateStrategy{"status": s}
}

// table is one row per built-in resource that kube-apiserver stores: adding a type is a line here
// (its discovery entry comes from kube's own discovery document, discovery.json).
func table(d Deps) map[schema.GroupResource]strategies {
	var resolve resolver.ResourceResolver
	if d.Resolve != nil {
		resolve = resolver.ResourceResolverFunc(d.Resolve)
	}
	var authz authorizer.Authorizer
	if d.Authorizer != nil {
		authz = d.Authorizer
	}
	namespaces := namespaceGetter{get: d.Namespace}
	vap := validatingadmissionpolicy.NewStrategy(authz, resolve)
	claims := resourceclaim.NewStrategy(namespaces, authz)
	pcr := podcertificaterequest.NewStrategy()
	core := func(r string) schema.GroupResource { return schema.GroupResource{Resource: r} }
	gr := func(g, r string) schema.GroupResource { return schema.GroupResource{Group: g, Resource: r} }
	coreEvents := core("events")
	return map[schema.GroupResource]strategies{
		core("configmaps"):             {main: configmap.Strategy, attrs: configmap.GetAttrs},
		core("endpoints"):              {main: endpoint.Strategy},
		core("events"):                 {main: event.Strategy, attrs: event.GetAttrs, ttl: d.EventTTL},
		core("limitranges"):            {defaultTable: true, main: limitrange.Strategy},
		core("namespaces"):             {returnsDeleted: true, main: namespace.Strategy, sub: map[string]rest.RESTUpdateStrategy{"status": namespace.StatusStrategy, "finalize": namespace.FinalizeStrategy}, attrs: namespace.GetAttrs},
		core("nodes"):                  {main: node.Strategy, sub: status(node.StatusStrategy), attrs: node.GetAttrs},
		core("persistentvolumeclaims"): {returnsDeleted: true, main: persistentvolumeclaim.Strategy, sub: status(persistentvolumeclaim.StatusStrategy), attrs: persistentvolumeclaim.GetAttrs},
		core("persistentvolumes"):      {returnsDeleted: true, main: persistentvolume.Strategy, sub: status(persistentvolume.StatusStrategy), attrs: persistentvolume.GetAttrs},
		core("pods"): {returnsDeleted: true, main: pod.Strategy, sub: map[string]rest.RESTUpdateStrategy{
			"status": pod.StatusStrategy, "ephemeralcontainers": pod.EphemeralContainersStrategy, "resize": pod.ResizeStrategy,
		}, attrs: pod.GetAttrs},
		core("podtemplates"):           {returnsDeleted: true, main: podtemplate.Strategy},
		core("replicationcontrollers"): {main: replicationcontroller.Strategy, sub: status(replicationcontroller.StatusStrategy), attrs: replicationcontroller.GetAttrs},
		core("resourcequotas"):         {returnsDeleted: true, main: resourcequota.Strategy, sub: status(resourcequota.StatusStrategy)},
		core("secrets"):                {main: secret.Strategy, attrs: secret.GetAttrs},
		core("serviceaccounts"):        {returnsDeleted: true, main: serviceaccount.Strategy},
		core("services"):               {returnsDeleted: true, main: service.Strategy, sub: status(service.StatusStrategy), attrs: service.GetAttrs},

		gr("admissionregistration.k8s.io", "mutatingadmissionpolicies"):         {main: mutatingadmissionpolicy.NewStrategy(authz, resolve)},
		gr("admissionregistration.k8s.io", "mutatingadmissionpolicybindings"):   {main: mutatingadmissionpolicybinding.NewStrategy(authz, nil, resolve)},
		gr("admissionregistration.k8s.io", "mutatingwebhookconfigurations"):     {main: mutatingwebhookconfiguration.Strategy},
		gr("admissionregistration.k8s.io", "validatingadmissionpolicies"):       {main: vap, sub: status(validatingadmissionpolicy.NewStatusStrategy(vap))},
		gr("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): {main: validatingadmissionpolicybinding.NewStrategy(authz, nil, resolve)},
		gr("admissionregistration.k8s.io", "validatingwebhookconfigurations"):   {main: validatingwebhookconfiguration.Strategy},

		gr("apps", "controllerrevisions"): {main: controllerrevision.Strategy},
		gr("apps", "daemonsets"):          {main: daemonset.Strategy, sub: status(daemonset.StatusStrategy)},
		gr("apps", "deployments"):         {main: deployment.Strategy, sub: status(deployment.StatusStrategy)},
		gr("apps", "replicasets"):         {main: replicaset.Strategy, sub: status(replicaset.StatusStrategy), attrs: replicaset.GetAttrs},
		gr("apps", "statefulsets"):        {main: statefulset.Strategy, sub: status(statefulset.StatusStrategy)},

		gr("autoscaling", "horizontalpodautoscalers"): {main: horizontalpodautoscaler.Strategy, sub: status(horizontalpodautoscaler.StatusStrategy)},
		gr("batch", "cronjobs"):                       {main: cronjob.Strategy, sub: status(cronjob.StatusStrategy)},
		gr("batch", "jobs"):                           {deleteWarning: "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning", main: job.Strategy, sub: status(job.StatusStrategy), attrs: job.GetAttrs},

		gr("certificates.k8s.io", "certificatesigningrequests"): {main: certificates.Strategy, sub: map[string]rest.RESTUpdateStrategy{
			"status": certificates.StatusStrategy, "approval": certificates.ApprovalStrategy,
		}, attrs: certificates.GetAttrs},
		gr("certificates.k8s.io", "clustertrustbundles"):    {main: clustertrustbundle.Strategy, attrs: clusterTrustBundleAttrs},
		gr("certificates.k8s.io", "podcertificaterequests"): {main: pcr, sub: status(podcertificaterequest.NewStatusStrategy(pcr, authz, nil)), attrs: podCertificateRequestAttrs},

		gr("coordination.k8s.io", "leases"):               {main: lease.Strategy},
		gr("discovery.k8s.io", "endpointslices"):          {main: endpointslice.Strategy},
		gr("events.k8s.io", "events"):                     {main: event.Strategy, attrs: event.GetAttrs, storedAs: &coreEvents, ttl: d.EventTTL},
		gr("flowcontrol.apiserver.k8s.io", "flowschemas"): {main: flowschema.Strategy, sub: status(flowschema.StatusStrategy)},
		gr("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"): {
			main: prioritylevelconfiguration.Strategy, sub: status(prioritylevelconfiguration.StatusStrategy)},

		gr("networking.k8s.io", "ingressclasses"):  {main: ingressclass.Strategy},
		gr("networking.k8s.io", "ingresses"):       {main: ingress.Strategy, sub: status(ingress.StatusStrategy)},
		gr("networking.k8s.io", "ipaddresses"):     {main: ipaddress.Strategy},
		gr("networking.k8s.io", "networkpolicies"): {main: networkpolicy.Strategy},
		gr("networking.k8s.io", "servicecidrs"):    {main: servicecidr.Strategy, sub: status(servicecidr.StatusStrategy)},

		gr("node.k8s.io", "runtimeclasses"):        {main: runtimeclass.Strategy},
		gr("policy", "poddisruptionbudgets"):       {main: poddisruptionbudget.Strategy, sub: status(poddisruptionbudget.StatusStrategy)},
		gr("scheduling.k8s.io", "priorityclasses"): {main: priorityclass.Strategy},

		gr("rbac.authorization.k8s.io", "clusterrolebindings"): {main: clusterrolebinding.Strategy},
		gr("rbac.authorization.k8s.io", "clusterroles"):        {defaultTable: true, main: clusterrole.Strategy},
		gr("rbac.authorization.k8s.io", "rolebindings"):        {main: rolebinding.Strategy},
		gr("rbac.authorization.k8s.io", "roles"):               {defaultTable: true, main: role.Strategy},

		gr("resource.k8s.io", "deviceclasses"):          {returnsDeleted: true, main: deviceclass.Strategy},
		gr("resource.k8s.io", "devicetaintrules"):       {main: devicetaintrule.Strategy, sub: status(devicetaintrule.StatusStrategy)},
		gr("resource.k8s.io", "resourceclaims"):         {returnsDeleted: true, main: claims, sub: status(resourceclaim.NewStatusStrategy(claims)), attrs: resourceclaim.GetAttrs},
		gr("resource.k8s.io", "resourceclaimtemplates"): {returnsDeleted: true, main: resourceclaimtemplate.NewStrategy(namespaces), attrs: resourceclaimtemplate.GetAttrs},
		gr("resource.k8s.io", "resourceslices"):         {returnsDeleted: true, main: resourceslice.Strategy, attrs: resourceslice.GetAttrs},

		gr("storage.k8s.io", "csidrivers"):              {returnsDeleted: true, main: csidriver.Strategy},
		gr("storage.k8s.io", "csinodes"):                {returnsDeleted: true, main: csinode.Strategy},
		gr("storage.k8s.io", "csistoragecapacities"):    {defaultTable: true, main: csistoragecapacity.Strategy},
		gr("storage.k8s.io", "storageclasses"):          {returnsDeleted: true, main: storageclass.Strategy},
		gr("storage.k8s.io", "volumeattachments"):       {returnsDeleted: true, main: volumeattachment.Strategy, sub: status(volumeattachment.StatusStrategy)},
		gr("storage.k8s.io", "volumeattributesclasses"): {returnsDeleted: true, main: volumeattributesclass.Strategy},

		gr("storagemigration.k8s.io", "storageversionmigrations"): {main: storagemigration.Strategy, sub: status(storagemigration.StatusStrategy)},

		gr("apiregistration.k8s.io", "apiservices"): {table: &apiserviceetcd.REST{}, main: apiservice.NewStrategy(scheme()), sub: status(apiservice.NewStatusStrategy(scheme())), attrs: apiservice.GetAttrs},
	}
}

// virtual are the resources kube-apiserver serves without storing them: create-only reviews and
// bindings, computed component statuses. Handlers answer them.
var virtual = map[schema.GroupResource]bool{
	{Resource: "bindings"}:                                                 true,
	{Resource: "componentstatuses"}:                                        true,
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:       true,
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}:             true,
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}: true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}:  true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:   true,
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}:      true,
}

// APIService objects are kube-aggregator's; kube-apiserver's scheme knows them too.
func init() { apiregistrationinstall.Install(legacyscheme.Scheme) }

// namespaceGetter is the one call kube's resource.k8s.io strategies make of a namespace client.
type namespaceGetter struct {
	typedcorev1.NamespaceInterface // only Get is implemented
	get                            func(ctx context.Context, name string) (*corev1.Namespace, error)
}

func (n namespaceGetter) Get(ctx context.Context, name string, _ metav1.GetOptions) (*corev1.Namespace, error) {
	return n.get(ctx, name)
}

// scheme is where every built-in type of this package is registered.
func scheme() *runtime.Scheme { return legacyscheme.Scheme }

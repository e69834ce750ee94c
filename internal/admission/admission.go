package admission

import (
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/kubernetes/pkg/kubeapiserver/admission/exclusion"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/approval"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/ctbattest"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/signing"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/subjectrestriction"
	"k8s.io/kubernetes/plugin/pkg/admission/defaulttolerationseconds"
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger"
	"k8s.io/kubernetes/plugin/pkg/admission/network/defaultingressclass"
	"k8s.io/kubernetes/plugin/pkg/admission/nodedeclaredfeatures"
	"k8s.io/kubernetes/plugin/pkg/admission/nodetaint"
	"k8s.io/kubernetes/plugin/pkg/admission/podresize"
	"k8s.io/kubernetes/plugin/pkg/admission/podtopologylabels"
	"k8s.io/kubernetes/plugin/pkg/admission/priority"
	"k8s.io/kubernetes/plugin/pkg/admission/runtimeclass"
	"k8s.io/kubernetes/plugin/pkg/admission/scheduling/podgroupprotection"
	"k8s.io/kubernetes/plugin/pkg/admission/security/podsecurity"
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/persistentvolume/resize"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageclass/setdefault"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageobjectinuseprotection"
)

// plugin is one of kube-apiserver's default admission plugins, in kube's order.
type plugin struct {
	name     string
	register func(*admission.Plugins)
}

// defaultPlugins are the plugins kube-apiserver 1.37 enables by default, in kube's order
// (AllOrderedPlugins): the built-in mutating and validating plugins, then the admission
// policies and webhooks, then ResourceQuota. NamespaceLifecycle is the objects pipeline's own.
// MutatingAdmissionPolicy runs only while its feature gate is on (on by default: GA in 1.36).
var defaultPlugins = []plugin{
	{limitranger.PluginName, limitranger.Register},
	{serviceaccount.PluginName, serviceaccount.Register},
	{nodetaint.PluginName, nodetaint.Register},
	{podsecurity.PluginName, podsecurity.Register},
	{priority.PluginName, priority.Register},
	{defaulttolerationseconds.PluginName, defaulttolerationseconds.Register},
	{setdefault.PluginName, setdefault.Register},
	{storageobjectinuseprotection.PluginName, storageobjectinuseprotection.Register},
	{podgroupprotection.PluginName, podgroupprotection.Register},
	{resize.PluginName, resize.Register},
	{runtimeclass.PluginName, runtimeclass.Register},
	{approval.PluginName, approval.Register},
	{signing.PluginName, signing.Register},
	{ctbattest.PluginName, ctbattest.Register},
	{subjectrestriction.PluginName, subjectrestriction.Register},
	{defaultingressclass.PluginName, defaultingressclass.Register},
	{podtopologylabels.PluginName, podtopologylabels.Register},
	{nodedeclaredfeatures.PluginName, nodedeclaredfeatures.Register},
	{podresize.PluginName, podresize.Register},
	{mutating.PluginName, mutating.Register},
	{mutatingwebhook.PluginName, mutatingwebhook.Register},
	{validating.PluginName, validating.Register},
	{validatingwebhook.PluginName, validatingwebhook.Register},
	{resourcequota.PluginName, resourcequota.Register},
}

// apiServerID names lapis in the plugins' metrics (kube-apiserver's --apiserver-id).
const apiServerID = "lapis"

// discoveryResetInterval is how often the policies' REST mapper forgets what discovery said,
// as kube-apiserver's admission post-start hook resets it.
const discoveryResetInterval = 30 * time.Second

// Options are what the chain is built from.
type Options struct {
	// Loopback is how lapis reaches itself, as the admin: webhooks referring to the
	// kubernetes Service (kubernetes.default.svc:443) are called there with these
	// credentials, as kube-apiserver calls itself. It also makes Dynamic and RESTMapper when
	// they are nil.
	Loopback *rest.Config
	// Client is a clientset over Loopback (what the plugins read and write through).
	Client kubernetes.Interface
	// Factory makes the plugins' informers. The caller starts it, and waits for it, once lapis
	// answers requests; the service resolver starts its own informers in it later.
	Factory informers.SharedInformerFactory
	// Authorizer decides what the certificate plugins ask and the CEL `authorizer` variable of
	// admission policies and webhooks' matchConditions.
	Authorizer authorizer.Authorizer
	// Stop ends the plugins' background work (kube's drained notification).
	Stop <-chan struct{}

	// Dynamic reads policies' params (any kind); nil makes one over Loopback.
	Dynamic dynamic.Interface
	// RESTMapper maps policies' paramKinds to resources; nil makes kube-apiserver's: discovery
	// over Client, cached and forgotten every 30 s.
	RESTMapper meta.RESTMapper
	// ServiceResolver resolves webhooks' service references; nil resolves them to one of the
	// Service's ready endpoints (kube's endpoint routing), kubernetes.default:443 to Loopback.
	ServiceResolver ServiceResolver
	// Enabled and Disabled are kube-apiserver's --enable-admission-plugins and
	// --disable-admission-plugins (see PluginNames).
	Enabled, Disabled []string
}

// New builds kube-apiserver's admission chain. The plugins read through Factory's informers;
// webhooks are called with no credentials of lapis's (kube-apiserver without an
// --admission-control-config-file), but the kubernetes Service with Loopback's.
func New(opts Options) (admission.Interface, error) {
	if opts.Client == nil || opts.Factory == nil || opts.Authorizer == nil || opts.Stop == nil {
		return nil, errors.New("admission: Client, Factory, Authorizer and Stop are required")
	}
	if (opts.Dynamic == nil || opts.ServiceResolver == nil) && opts.Loopback == nil {
		return nil, errors.New("admission: Loopback is required without Dynamic and ServiceResolver")
	}
	if opts.Dynamic == nil {
		d, err := dynamic.NewForConfig(opts.Loopback)
		if err != nil {
			return nil, fmt.Errorf("admission: dynamic client: %w", err)
		}
		opts.Dynamic = d
	}
	if opts.RESTMapper == nil {
		opts.RESTMapper = discoveryMapper(opts.Client, opts.Stop)
	}
	if opts.ServiceResolver == nil {
		r, err := NewServiceResolver(opts.Factory, opts.Loopback.Host, opts.Stop)
		if err != nil {
			return nil, err
		}
		opts.ServiceResolver = r
	}

	names, err := PluginNames(opts.Enabled, opts.Disabled)
	if err != nil {
		return nil, err
	}
	plugins := admission.NewPlugins()
	for _, p := range defaultPlugins {
		p.register(plugins)
	}
	generic := initializer.New(opts.Client, opts.Dynamic, opts.Factory, opts.Authorizer, utilfeature.DefaultFeatureGate,
		compatibility.DefaultComponentGlobalsRegistry.EffectiveVersionFor(basecompatibility.DefaultKubeComponent),
		opts.Stop, opts.RESTMapper)
	quota, err := newQuotaInitializer(opts.Factory)
	if err != nil {
		return nil, err
	}
	inits := admission.PluginInitializers{
		initializer.NewAPIServerIDInitializer(apiServerID),
		generic,
		newWebhookInitializer(opts.Loopback, opts.ServiceResolver),
		quota,
		excludedResources(exclusion.Excluded()),
	}
	chain, err := plugins.NewFromPlugins(names, noConfig{}, inits, nil)
	if err != nil {
		return nil, fmt.Errorf("admission plugins: %w", err)
	}
	return chain, nil
}

// discoveryMapper is kube-apiserver's REST mapper for admission: discovery, cached, forgotten
// every 30 s so that new kinds (CRDs) are found. It asks nothing until first used.
func discoveryMapper(client kubernetes.Interface, stop <-chan struct{}) meta.RESTMapper {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(client.Discovery()))
	go wait.Until(mapper.Reset, discoveryResetInterval, stop)
	return mapper
}

// excludedResources tells the policy and webhook plugins which resources they never see
// (kube's list: the authentication and authorization reviews).
type excludedResources []schema.GroupResource

func (e excludedResources) Initialize(plugin admission.Interface) {
	if wants, ok := plugin.(initializer.WantsExcludedAdmissionResources); ok {
		wants.SetExcludedAdmissionResources(e)
	}
}

// noConfig gives every plugin its default configuration, as kube-apiserver without
// --admission-control-config-file.
type noConfig struct{}

func (noConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }

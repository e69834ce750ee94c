package admission

import (
	"fmt"
	"io"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	basecompatibility "k8s.io/component-base/compatibility"
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

// defaultPlugins are the plugins kube-apiserver 1.37 enables by default that lapis runs, in
// kube's order (AllOrderedPlugins). NamespaceLifecycle is the objects pipeline's own; the
// webhook and policy plugins are not run yet (ResourceQuota comes after them in kube's order).
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
	{resourcequota.PluginName, resourcequota.Register},
}

// New builds the chain. The plugins read through factory's informers, which the caller starts
// (and waits for) once the server answers requests; authz decides what the certificate plugins
// ask (approving and signing for a signer).
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, authz authorizer.Authorizer, stop <-chan struct{}) (admission.Interface, error) {
	plugins := admission.NewPlugins()
	names := make([]string, 0, len(defaultPlugins))
	for _, p := range defaultPlugins {
		p.register(plugins)
		names = append(names, p.name)
	}
	init := initializer.New(client, nil, factory, authz, utilfeature.DefaultFeatureGate,
		compatibility.DefaultComponentGlobalsRegistry.EffectiveVersionFor(basecompatibility.DefaultKubeComponent), stop, nil)
	quota, err := newQuotaInitializer(factory)
	if err != nil {
		return nil, err
	}
	chain, err := plugins.NewFromPlugins(names, noConfig{}, admission.PluginInitializers{init, quota}, nil)
	if err != nil {
		return nil, fmt.Errorf("admission plugins: %w", err)
	}
	return chain, nil
}

// noConfig gives every plugin its default configuration, as kube-apiserver without
// --admission-control-config-file.
type noConfig struct{}

func (noConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }

package admission

import (
	"fmt"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/client-go/informers"
	quotainstall "k8s.io/kubernetes/pkg/quota/v1/install"
)

// quotaInitializer gives the ResourceQuota plugin kube-apiserver's quota configuration: kube's
// evaluators (pods, services, persistentvolumeclaims, resourceclaims and object counts), as
// kube-apiserver's own plugin initializer (pkg/controlplane/apiserver/admission) does.
type quotaInitializer struct {
	config quota.Configuration
}

func newQuotaInitializer(factory informers.SharedInformerFactory) (quotaInitializer, error) {
	// Every resource lapis serves is enabled, as kube-apiserver with its default
	// --runtime-config: a nil APIResourceConfigSource.
	config, err := quotainstall.NewQuotaConfigurationForAdmission(factory, nil)
	if err != nil {
		return quotaInitializer{}, fmt.Errorf("quota configuration: %w", err)
	}
	return quotaInitializer{config: config}, nil
}

func (q quotaInitializer) Initialize(plugin admission.Interface) {
	if wants, ok := plugin.(initializer.WantsQuotaConfiguration); ok {
		wants.SetQuotaConfiguration(q.config)
	}
}

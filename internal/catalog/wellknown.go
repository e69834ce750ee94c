package catalog

import "k8s.io/apimachinery/pkg/runtime/schema"

// The built-in resources that several of lapis's packages look up by name (controllers,
// bootstrap, allocation, handlers), each declared once here. A resource only one package names
// stays declared there.
var (
	NamespacesGVR      = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	ConfigMapsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	SecretsGVR         = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	ServiceAccountsGVR = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	PodsGVR            = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	ServicesGVR        = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	NodesGVR           = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	DeploymentsGVR     = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

	FlowSchemasGVR                 = schema.GroupVersionResource{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "flowschemas"}
	PriorityLevelConfigurationsGVR = schema.GroupVersionResource{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "prioritylevelconfigurations"}
)

package sharedetcd

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/lapis-dev/lapis/internal/testkit/certfixtures"
)

// The corpus's namespaces and its custom resource's group.
const (
	ns    = "sd"
	nsTwo = "sd-two"
)

// corpusSetup is what the rest of the corpus needs first: its namespaces (whose default
// ServiceAccount, made by the ServiceAccount controller, Pods need) and a CRD served at two
// versions, v1 stored, v2 converted by changing apiVersion only (strategy None).
const corpusSetup = `
apiVersion: v1
kind: Namespace
metadata: {name: sd, labels: {team: storage}}
---
apiVersion: v1
kind: Namespace
metadata: {name: sd-two}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.sd.example.com}
spec:
  group: sd.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  conversion: {strategy: None}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns: [{name: Size, type: integer, jsonPath: .spec.size}]
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}, color: {type: string}}}, status: {type: object, properties: {ready: {type: boolean}}}}}}
  - name: v2
    served: true
    storage: false
    subresources: {status: {}}
    additionalPrinterColumns: [{name: Color, type: string, jsonPath: .spec.color}]
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}, color: {type: string}}}, status: {type: object, properties: {ready: {type: boolean}}}}}}
`

// corpusObjects is one object of (about) every built-in kind the differential tests create
// (test/against-kube-apiserver's builtins, whose fixtures both servers accept), Services with
// fixed cluster IPs and node ports (so that both servers' corpora have the same keys), and
// custom resources written at both versions.
const corpusObjects = `
apiVersion: v1
kind: ConfigMap
metadata: {name: sd-config, namespace: sd, labels: {app: sd}}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: sd-other, namespace: sd-two}
data: {b: "2"}
---
apiVersion: v1
kind: Secret
metadata: {name: sd-secret, namespace: sd}
type: Opaque
data: {a: YQ==}
---
apiVersion: v1
kind: Secret
metadata: {name: sd-tls, namespace: sd-two}
type: kubernetes.io/tls
data: {tls.crt: YQ==, tls.key: Yg==}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: sd-sa, namespace: sd}
automountServiceAccountToken: false
---
apiVersion: v1
kind: Service
metadata: {name: sd-clusterip, namespace: sd}
spec: {clusterIP: 10.96.100.10, selector: {app: sd}, ports: [{name: http, port: 80, targetPort: 8080}]}
---
apiVersion: v1
kind: Service
metadata: {name: sd-nodeport, namespace: sd}
spec:
  type: NodePort
  clusterIP: 10.96.100.11
  selector: {app: sd}
  ports: [{name: http, port: 80, nodePort: 30080}, {name: metrics, port: 9090, nodePort: 30090}]
---
apiVersion: v1
kind: Service
metadata: {name: sd-headless, namespace: sd}
spec: {clusterIP: None, selector: {app: sd}, ports: [{name: http, port: 80}]}
---
apiVersion: v1
kind: Endpoints
metadata: {name: sd-endpoints, namespace: sd}
subsets: [{addresses: [{ip: 10.1.2.3}], ports: [{name: http, port: 80, protocol: TCP}]}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: sd-slice, namespace: sd, labels: {kubernetes.io/service-name: sd-clusterip}}
addressType: IPv4
endpoints: [{addresses: [10.1.2.3]}]
ports: [{name: http, port: 80, protocol: TCP}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: sd-deploy, namespace: sd}
spec:
  replicas: 1
  selector: {matchLabels: {app: sd}}
  template: {metadata: {labels: {app: sd}}, spec: {containers: [{name: app, image: registry.k8s.io/pause:3.10}]}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sd-sts, namespace: sd}
spec:
  serviceName: sd-headless
  replicas: 1
  selector: {matchLabels: {app: sd-sts}}
  template: {metadata: {labels: {app: sd-sts}}, spec: {containers: [{name: app, image: registry.k8s.io/pause:3.10}]}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: sd-ds, namespace: sd}
spec:
  selector: {matchLabels: {app: sd-ds}}
  template: {metadata: {labels: {app: sd-ds}}, spec: {containers: [{name: app, image: registry.k8s.io/pause:3.10}]}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: sd-rs, namespace: sd}
spec:
  replicas: 1
  selector: {matchLabels: {app: sd-rs}}
  template: {metadata: {labels: {app: sd-rs}}, spec: {containers: [{name: app, image: registry.k8s.io/pause:3.10}]}}
---
apiVersion: apps/v1
kind: ControllerRevision
metadata: {name: sd-revision, namespace: sd}
data: {spec: {}}
revision: 1
---
apiVersion: v1
kind: ReplicationController
metadata: {name: sd-rc, namespace: sd}
spec:
  replicas: 1
  selector: {app: sd-rc}
  template: {metadata: {labels: {app: sd-rc}}, spec: {containers: [{name: app, image: registry.k8s.io/pause:3.10}]}}
---
apiVersion: v1
kind: PodTemplate
metadata: {name: sd-podtemplate, namespace: sd}
template: {metadata: {labels: {app: sd}}, spec: {containers: [{name: app, image: registry.k8s.io/pause:3.10}]}}
---
apiVersion: batch/v1
kind: Job
metadata: {name: sd-job, namespace: sd}
spec:
  template: {spec: {restartPolicy: Never, containers: [{name: app, image: registry.k8s.io/pause:3.10}]}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: sd-cron, namespace: sd}
spec:
  schedule: "*/5 * * * *"
  jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: app, image: registry.k8s.io/pause:3.10}]}}}}
---
apiVersion: v1
kind: Pod
metadata: {name: sd-pod, namespace: sd, labels: {app: sd}}
spec: {containers: [{name: app, image: registry.k8s.io/pause:3.10}]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: sd-pvc, namespace: sd}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: sd-pv}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /tmp/sd}, persistentVolumeReclaimPolicy: Retain}
---
apiVersion: v1
kind: Node
metadata: {name: sd-node}
spec: {podCIDR: 10.244.1.0/24}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: sd-quota, namespace: sd}
spec: {hard: {pods: "10", services: "10"}}
---
apiVersion: v1
kind: LimitRange
metadata: {name: sd-limits, namespace: sd-two}
spec: {limits: [{type: Container, default: {cpu: 500m}, defaultRequest: {cpu: 100m}}]}
---
apiVersion: v1
kind: Event
metadata: {name: sd-event.1, namespace: sd}
involvedObject: {apiVersion: v1, kind: Pod, name: sd-pod, namespace: sd}
reason: Testing
message: a test event
type: Normal
source: {component: sharedetcd}
firstTimestamp: "2026-01-01T00:00:00Z"
lastTimestamp: "2026-01-01T00:00:00Z"
count: 1
---
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: sd-event.2, namespace: sd}
eventTime: "2026-01-01T00:00:00.000000Z"
reportingController: sharedetcd.example.com/ctl
reportingInstance: sd-1
action: Testing
reason: Testing
regarding: {kind: Pod, name: sd-pod, namespace: sd}
note: a test event
type: Normal
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: sd-lease, namespace: sd}
spec: {holderIdentity: sd, leaseDurationSeconds: 15}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: sd-role, namespace: sd}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: sd-rolebinding, namespace: sd}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: sd-role}
subjects: [{kind: ServiceAccount, name: sd-sa, namespace: sd}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: sd-clusterrole}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: sd-aggregated, labels: {sd.example.com/aggregate: "true", rbac.authorization.k8s.io/aggregate-to-view: "true"}}
rules: [{apiGroups: [sd.example.com], resources: [widgets], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: sd-aggregator}
aggregationRule: {clusterRoleSelectors: [{matchLabels: {sd.example.com/aggregate: "true"}}]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: sd-clusterrolebinding}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: sd-user}]
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: sd-priority}
value: 1000
description: sharedetcd
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: sd-netpol, namespace: sd}
spec: {podSelector: {}, policyTypes: [Ingress]}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: sd-ingressclass}
spec: {controller: example.com/sharedetcd}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: sd-ingress, namespace: sd}
spec: {ingressClassName: sd-ingressclass, defaultBackend: {service: {name: sd-clusterip, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: IPAddress
metadata: {name: 192.168.77.10}
spec: {parentRef: {group: "", resource: services, namespace: sd, name: sd-external}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: sd-hpa, namespace: sd}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: sd-deploy}
  minReplicas: 1
  maxReplicas: 3
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: sd-pdb, namespace: sd}
spec: {minAvailable: 1, selector: {matchLabels: {app: sd}}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: sd-storage}
provisioner: sd.csi.example.com
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: sd.csi.example.com}
spec: {attachRequired: false}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: sd-node}
spec: {drivers: [{name: sd.csi.example.com, nodeID: sd-node}]}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: sd-capacity, namespace: sd}
storageClassName: sd-storage
capacity: 1Gi
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: sd-attachment}
spec: {attacher: sd.csi.example.com, nodeName: sd-node, source: {persistentVolumeName: sd-pv}}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata: {name: sd-vac}
driverName: sd.csi.example.com
parameters: {a: b}
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: sd-runtime}
handler: sharedetcd
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: sd-vwc}
webhooks: [{name: validate.sd.example.com, clientConfig: {url: "https://127.0.0.1:1/validate"}, rules: [{apiGroups: [none.sd.example.com], apiVersions: [v1], operations: [CREATE], resources: [nothings]}], sideEffects: None, admissionReviewVersions: [v1], failurePolicy: Ignore}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: sd-mwc}
webhooks: [{name: mutate.sd.example.com, clientConfig: {url: "https://127.0.0.1:1/mutate"}, rules: [{apiGroups: [none.sd.example.com], apiVersions: [v1], operations: [CREATE], resources: [nothings]}], sideEffects: None, admissionReviewVersions: [v1], failurePolicy: Ignore}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: sd-vap}
spec:
  failurePolicy: Ignore
  matchConstraints: {resourceRules: [{apiGroups: [none.sd.example.com], apiVersions: [v1], operations: [CREATE], resources: [nothings]}]}
  validations: [{expression: "true"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: sd-vapb}
spec: {policyName: sd-vap, validationActions: [Deny]}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: sd-plc}
spec: {type: Limited, limited: {nominalConcurrencyShares: 5, limitResponse: {type: Reject}}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: sd-flowschema}
spec:
  priorityLevelConfiguration: {name: sd-plc}
  matchingPrecedence: 9000
  rules: [{subjects: [{kind: User, user: {name: sd-nobody}}], resourceRules: [{verbs: [get], apiGroups: [""], resources: [nothings], namespaces: ["*"]}]}]
---
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: sd-csr}
spec: {request: $CSR, signerName: example.com/sharedetcd, usages: [digital signature, client auth], expirationSeconds: 3600}
---
apiVersion: certificates.k8s.io/v1
kind: ClusterTrustBundle
metadata: {name: sd-bundle}
spec: {trustBundle: $CERT}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1.sd-api.example.com}
spec: {group: sd-api.example.com, version: v1, groupPriorityMinimum: 100, versionPriority: 100}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: sd-deviceclass}
spec: {selectors: [{cel: {expression: 'device.driver == "sd.example.com"'}}]}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: sd-claimtemplate, namespace: sd}
spec: {spec: {devices: {requests: [{name: req, exactly: {deviceClassName: sd-deviceclass}}]}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: sd-resourceslice}
spec: {driver: sd.example.com, pool: {name: pool, generation: 1, resourceSliceCount: 1}, nodeName: sd-node, devices: [{name: dev0}]}
---
apiVersion: sd.example.com/v1
kind: Widget
metadata: {name: sd-widget-v1, namespace: sd}
spec: {size: 1, color: red}
---
apiVersion: sd.example.com/v2
kind: Widget
metadata: {name: sd-widget-v2, namespace: sd}
spec: {size: 2, color: blue}
`

// corpusApplied are server-side applies by two field managers each, so that managedFields
// have entries of both operations and several managers; with the owners and finalizers of
// corpusRelations, they make the corpus's objects richer than one creation each.
var corpusApplied = []apply{
	{manager: "sd-alpha", path: "/api/v1/namespaces/sd/configmaps/sd-applied", body: `
apiVersion: v1
kind: ConfigMap
metadata: {name: sd-applied, namespace: sd, labels: {alpha: "yes"}}
data: {a: "1"}`},
	{manager: "sd-beta", path: "/api/v1/namespaces/sd/configmaps/sd-applied", body: `
apiVersion: v1
kind: ConfigMap
metadata: {name: sd-applied, namespace: sd, annotations: {beta: "yes"}}
data: {b: "2"}`},
	{manager: "sd-alpha", path: "/apis/apps/v1/namespaces/sd/deployments/sd-applied", body: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: sd-applied, namespace: sd}
spec:
  replicas: 2
  selector: {matchLabels: {app: sd-applied}}
  template: {metadata: {labels: {app: sd-applied}}, spec: {containers: [{name: app, image: registry.k8s.io/pause:3.10}]}}`},
	{manager: "sd-beta", path: "/apis/apps/v1/namespaces/sd/deployments/sd-applied", body: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: sd-applied, namespace: sd, annotations: {beta: "yes"}}
spec:
  template: {spec: {containers: [{name: sidecar, image: registry.k8s.io/pause:3.10}]}}`},
	{manager: "sd-alpha", path: "/apis/sd.example.com/v1/namespaces/sd/widgets/sd-widget-applied", body: `
apiVersion: sd.example.com/v1
kind: Widget
metadata: {name: sd-widget-applied, namespace: sd}
spec: {size: 3}`},
	{manager: "sd-beta", path: "/apis/sd.example.com/v2/namespaces/sd/widgets/sd-widget-applied", body: `
apiVersion: sd.example.com/v2
kind: Widget
metadata: {name: sd-widget-applied, namespace: sd}
spec: {color: green}`},
}

// apply is one server-side apply.
type apply struct {
	manager, path, body string
	force               bool
}

func (a apply) send(t *testing.T, s *server, want ...int) answer {
	t.Helper()
	q := "?fieldManager=" + a.manager
	if a.force {
		q += "&force=true"
	}
	return s.must(t, "PATCH", a.path+q, applyType, []byte(a.body), want...)
}

// writeCorpus writes the whole corpus through s: setup, objects, applies, then the owned and
// finalized objects. A write s refuses is an error of t, and the rest goes on: the comparison
// then names what is missing.
func writeCorpus(t *testing.T, s *server) {
	t.Helper()
	for _, doc := range documents(t, corpusSetup) {
		create(t, s, doc)
	}
	waitFor(t, s, 30*time.Second, "the CRD widgets.sd.example.com is Established", func() bool {
		return hasCondition(t, s, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.sd.example.com", "Established")
	})
	for _, n := range []string{ns, nsTwo} {
		waitFor(t, s, 30*time.Second, "namespace "+n+" has its default ServiceAccount", func() bool {
			return s.do(t, "GET", "/api/v1/namespaces/"+n+"/serviceaccounts/default", "", "", nil).code == http.StatusOK
		})
	}
	for _, doc := range documents(t, certificateFixtures(t).Replace(corpusObjects)) {
		create(t, s, doc)
	}
	for _, a := range corpusApplied {
		a.send(t, s, http.StatusOK, http.StatusCreated)
	}
	writeRelations(t, s)
}

// writeRelations writes objects with ownerReferences (to owners that exist: the garbage
// collector leaves them) and with finalizers (which nothing removes).
func writeRelations(t *testing.T, s *server) {
	t.Helper()
	owner := create(t, s, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "sd-owner", "namespace": ns}})
	deploy := s.must(t, "GET", "/apis/apps/v1/namespaces/sd/deployments/sd-deploy", "", nil, http.StatusOK)
	ref := func(a answer, apiVersion, kind string, controller bool) map[string]any {
		var o struct {
			Metadata struct{ Name, UID string }
		}
		_ = json.Unmarshal(a.body, &o)
		return map[string]any{"apiVersion": apiVersion, "kind": kind, "name": o.Metadata.Name, "uid": o.Metadata.UID,
			"controller": controller, "blockOwnerDeletion": true}
	}
	create(t, s, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
		"name": "sd-owned", "namespace": ns, "ownerReferences": []any{ref(owner, "v1", "ConfigMap", true)}}})
	create(t, s, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{
		"name": "sd-owned-secret", "namespace": ns, "ownerReferences": []any{ref(deploy, "apps/v1", "Deployment", false), ref(owner, "v1", "ConfigMap", false)}},
		"stringData": map[string]any{"k": "v"}})
	create(t, s, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
		"name": "sd-finalized", "namespace": ns, "finalizers": []any{"sd.example.com/keep"}}, "data": map[string]any{"f": "1"}})
	create(t, s, map[string]any{"apiVersion": "sd.example.com/v2", "kind": "Widget", "metadata": map[string]any{
		"name": "sd-widget-finalized", "namespace": ns, "finalizers": []any{"sd.example.com/keep"}}, "spec": map[string]any{"size": 4}})
}

// settleCorpus waits until the controllers have done what they do to the corpus (status of
// quotas, admission policies, APIServices and FlowSchemas; aggregated ClusterRoles;
// kube-root-ca.crt), then until etcd is quiet.
func settleCorpus(t *testing.T, s *server, e *etcdServer) {
	t.Helper()
	for path, field := range map[string]string{
		"/api/v1/namespaces/sd/resourcequotas/sd-quota":                                  "status.used",
		"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/sd-vap":       "status.observedGeneration",
		"/apis/apiregistration.k8s.io/v1/apiservices/v1.sd-api.example.com":              "status.conditions",
		"/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/sd-flowschema":                "status.conditions",
		"/apis/rbac.authorization.k8s.io/v1/clusterroles/sd-aggregator":                  "rules",
		"/api/v1/namespaces/sd/configmaps/kube-root-ca.crt":                              "data",
		"/api/v1/namespaces/sd-two/configmaps/kube-root-ca.crt":                          "data",
		"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.sd.example.com": "status.storedVersions",
		"/api/v1/namespaces/sd/serviceaccounts/default":                                  "metadata.name",
	} {
		waitFor(t, s, 30*time.Second, path+" has "+field, func() bool {
			a := s.do(t, "GET", path, "", "", nil)
			var o map[string]any
			return a.code == http.StatusOK && json.Unmarshal(a.body, &o) == nil && nested(o, strings.Split(field, ".")...) != nil
		})
	}
	waitFor(t, s, 30*time.Second, "the view ClusterRole aggregates sd-aggregated's rule", func() bool {
		a := s.do(t, "GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/view", "", "", nil)
		return strings.Contains(string(a.body), `"widgets"`)
	})
	quiet(t, e)
}

// documents are the YAML documents of a multi-document string.
func documents(t *testing.T, multi string) []map[string]any {
	t.Helper()
	var docs []map[string]any
	for _, part := range strings.Split(multi, "\n---\n") {
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(part), &doc); err != nil {
			t.Fatalf("corpus document %q: %v", part, err)
		}
		docs = append(docs, doc)
	}
	return docs
}

// create POSTs obj to its collection; a refusal is an error of t.
func create(t *testing.T, s *server, obj map[string]any) answer {
	t.Helper()
	body, _ := json.Marshal(obj)
	md, _ := obj["metadata"].(map[string]any)
	namespace, _ := md["namespace"].(string)
	path := collectionOf(t, obj["apiVersion"].(string), obj["kind"].(string), namespace)
	a := s.do(t, "POST", path+"?fieldManager="+fieldOwner, jsonType, "", body)
	if a.code != http.StatusCreated {
		t.Errorf("%s: creating %s %s/%s: %d: %s", s.name, obj["kind"], namespace, md["name"], a.code, a.body)
	}
	return a
}

// collectionOf is the path of a kind's collection; the corpus's kinds are all here.
func collectionOf(t *testing.T, apiVersion, kind, namespace string) string {
	t.Helper()
	resource, ok := corpusResources[kind]
	if !ok {
		t.Fatalf("no resource known for kind %s", kind)
	}
	p := "/apis/" + apiVersion
	if apiVersion == "v1" {
		p = "/api/v1"
	}
	if namespace != "" {
		p += "/namespaces/" + namespace
	}
	return p + "/" + resource
}

// corpusResources are the resources of the corpus's kinds.
var corpusResources = map[string]string{
	"Namespace": "namespaces", "CustomResourceDefinition": "customresourcedefinitions", "ConfigMap": "configmaps",
	"Secret": "secrets", "ServiceAccount": "serviceaccounts", "Service": "services", "Endpoints": "endpoints",
	"EndpointSlice": "endpointslices", "Deployment": "deployments", "StatefulSet": "statefulsets",
	"DaemonSet": "daemonsets", "ReplicaSet": "replicasets", "ControllerRevision": "controllerrevisions",
	"ReplicationController": "replicationcontrollers", "PodTemplate": "podtemplates", "Job": "jobs",
	"CronJob": "cronjobs", "Pod": "pods", "PersistentVolumeClaim": "persistentvolumeclaims",
	"PersistentVolume": "persistentvolumes", "Node": "nodes", "ResourceQuota": "resourcequotas",
	"LimitRange": "limitranges", "Event": "events", "Lease": "leases", "Role": "roles", "RoleBinding": "rolebindings",
	"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings", "PriorityClass": "priorityclasses",
	"NetworkPolicy": "networkpolicies", "IngressClass": "ingressclasses", "Ingress": "ingresses",
	"IPAddress": "ipaddresses", "HorizontalPodAutoscaler": "horizontalpodautoscalers",
	"PodDisruptionBudget": "poddisruptionbudgets", "StorageClass": "storageclasses", "CSIDriver": "csidrivers",
	"CSINode": "csinodes", "CSIStorageCapacity": "csistoragecapacities", "VolumeAttachment": "volumeattachments",
	"VolumeAttributesClass": "volumeattributesclasses", "RuntimeClass": "runtimeclasses",
	"ValidatingWebhookConfiguration": "validatingwebhookconfigurations",
	"MutatingWebhookConfiguration":   "mutatingwebhookconfigurations",
	"ValidatingAdmissionPolicy":      "validatingadmissionpolicies", "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
	"PriorityLevelConfiguration": "prioritylevelconfigurations", "FlowSchema": "flowschemas",
	"CertificateSigningRequest": "certificatesigningrequests", "ClusterTrustBundle": "clustertrustbundles",
	"APIService": "apiservices", "DeviceClass": "deviceclasses", "ResourceClaimTemplate": "resourceclaimtemplates",
	"ResourceSlice": "resourceslices", "Widget": "widgets",
}

// waitFor polls cond until it holds; after timeout it is an error of t.
func waitFor(t *testing.T, s *server, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("%s: waited %v for: %s", s.name, timeout, what)
			return
		}
	}
}

// hasCondition tells whether the object at path has a condition of type kind with status True.
func hasCondition(t *testing.T, s *server, path, kind string) bool {
	t.Helper()
	var o struct {
		Status struct {
			Conditions []struct{ Type, Status string }
		}
	}
	a := s.do(t, "GET", path, "", "", nil)
	if a.code != http.StatusOK || json.Unmarshal(a.body, &o) != nil {
		return false
	}
	for _, c := range o.Status.Conditions {
		if c.Type == kind && c.Status == "True" {
			return true
		}
	}
	return false
}

// nested is the value at path in o, or nil.
func nested(o map[string]any, path ...string) any {
	var v any = o
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// certificateFixtures replace $CSR and $CERT in the corpus (certfixtures).
func certificateFixtures(t *testing.T) *strings.Replacer {
	t.Helper()
	values, err := certfixtures.Placeholders("sharedetcd")
	if err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer("$CSR", values["$CSR"], "$CERT", values["$CERT"])
}

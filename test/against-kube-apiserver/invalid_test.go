package againstkube

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"sigs.k8s.io/yaml"
)

// invalidKind is a kind with a valid base object and requests kube refuses about it.
type invalidKind struct {
	gv, resource, kind string
	namespaced         bool
	base               string // YAML: the valid object, without apiVersion, kind and name
	cases              []invalid
}

// invalid is one refused request: a creation of the base object with over merged into it (RFC
// 7386: null removes a field), or, with update set, a merge patch (or, with put, a PUT of the
// server's own base object with the patch merged in) of the created base object.
type invalid struct {
	name   string
	over   string
	update string
	put    bool
	query  string // added to the request's path
	kube   int    // kube's code; 422 unless set
}

const pause = "registry.k8s.io/pause:3.10"

var podTemplate = `{metadata: {labels: {app: kd}}, spec: {containers: [{name: app, image: ` + pause + `}]}}`

var invalidKinds = []invalidKind{
	{gv: "apps/v1", resource: "deployments", kind: "Deployment", namespaced: true, base: `
spec: {replicas: 1, selector: {matchLabels: {app: kd}}, template: ` + podTemplate + `}`,
		cases: []invalid{
			{name: "no selector", over: `spec: {selector: null}`},
			{name: "empty selector", over: `spec: {selector: {matchLabels: null}}`},
			{name: "selector does not match the template", over: `spec: {template: {metadata: {labels: {app: other}}}}`},
			{name: "selector with an unknown operator", over: `spec: {selector: {matchLabels: null, matchExpressions: [{key: app, operator: Near, values: [kd]}]}}`},
			{name: "Recreate with rollingUpdate", over: `spec: {strategy: {type: Recreate, rollingUpdate: {maxSurge: 1}}}`},
			{name: "unknown strategy type", over: `spec: {strategy: {type: Sideways}}`},
			{name: "maxSurge and maxUnavailable both 0", over: `spec: {strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 0}}}`},
			{name: "negative replicas", over: `spec: {replicas: -1}`},
			{name: "progressDeadlineSeconds not above minReadySeconds", over: `spec: {minReadySeconds: 10, progressDeadlineSeconds: 5}`},
			{name: "container without image", over: `spec: {template: {spec: {containers: [{name: app}]}}}`},
			{name: "name with capitals", over: `metadata: {name: Bad_Name}`},
			{name: "replicas as a string", over: `spec: {replicas: two}`, kube: http.StatusBadRequest},
			{name: "unknown field, strict", over: `spec: {replicaz: 1}`, query: "?fieldValidation=Strict", kube: http.StatusBadRequest},
			{name: "update: selector changed", update: `spec: {selector: {matchLabels: {app: other}}, template: {metadata: {labels: {app: other}}}}`},
			{name: "update: Recreate with rollingUpdate", update: `spec: {strategy: {type: Recreate}}`},
			{name: "update: stale resourceVersion", update: `metadata: {resourceVersion: "1"}`, kube: http.StatusConflict},
		}},
	{gv: "v1", resource: "pods", kind: "Pod", namespaced: true, base: `
spec: {containers: [{name: app, image: ` + pause + `}]}`,
		cases: []invalid{
			{name: "no containers", over: `spec: {containers: null}`},
			{name: "bad container name", over: `spec: {containers: [{name: Bad_Name, image: x}]}`},
			{name: "duplicate container names", over: `spec: {containers: [{name: app, image: a}, {name: app, image: b}]}`},
			{name: "unknown restartPolicy", over: `spec: {restartPolicy: Sometimes}`},
			{name: "unknown dnsPolicy", over: `spec: {dnsPolicy: Sometimes}`},
			{name: "containerPort out of range", over: `spec: {containers: [{name: app, image: x, ports: [{containerPort: 70000}]}]}`},
			{name: "requests above limits", over: `spec: {containers: [{name: app, image: x, resources: {requests: {cpu: "2"}, limits: {cpu: "1"}}}]}`},
			{name: "volume with two sources", over: `spec: {volumes: [{name: v, emptyDir: {}, hostPath: {path: /tmp}}]}`},
			{name: "mount of an unknown volume", over: `spec: {containers: [{name: app, image: x, volumeMounts: [{name: nope, mountPath: /data}]}]}`},
			{name: "unknown field, strict", over: `spec: {containerz: []}`, query: "?fieldValidation=Strict", kube: http.StatusBadRequest},
			{name: "update: container renamed", update: `spec: {containers: [{name: other, image: ` + pause + `}]}`},
			{name: "update: container added (PUT)", update: `spec: {containers: [{name: app, image: ` + pause + `}, {name: two, image: ` + pause + `}]}`, put: true},
			{name: "update: restartPolicy changed", update: `spec: {restartPolicy: Never}`},
		}},
	{gv: "v1", resource: "services", kind: "Service", namespaced: true, base: `
spec: {selector: {app: kd}, ports: [{name: http, port: 80, targetPort: 8080}]}`,
		cases: []invalid{
			{name: "no ports", over: `spec: {ports: null}`},
			{name: "unknown type", over: `spec: {type: Bogus}`},
			{name: "port 0", over: `spec: {ports: [{name: http, port: 0}]}`},
			{name: "two ports without names", over: `spec: {ports: [{port: 80}, {port: 81}]}`},
			{name: "duplicate ports", over: `spec: {ports: [{name: a, port: 80}, {name: b, port: 80}]}`},
			{name: "nodePort out of range", over: `spec: {type: NodePort, ports: [{name: http, port: 80, nodePort: 80}]}`},
			{name: "nodePort on a ClusterIP service", over: `spec: {ports: [{name: http, port: 80, nodePort: 30080}]}`},
			{name: "malformed clusterIP", over: `spec: {clusterIP: "1.2.3"}`},
			{name: "ExternalName without externalName", over: `spec: {type: ExternalName, selector: null}`},
			{name: "unknown sessionAffinity", over: `spec: {sessionAffinity: Sticky}`},
			{name: "externalTrafficPolicy on a ClusterIP service", over: `spec: {externalTrafficPolicy: Local}`},
			{name: "update: clusterIP changed to None", update: `spec: {clusterIP: None, clusterIPs: [None]}`},
		}},
	{gv: "batch/v1", resource: "jobs", kind: "Job", namespaced: true, base: `
spec: {template: {spec: {restartPolicy: Never, containers: [{name: app, image: ` + pause + `}]}}}`,
		cases: []invalid{
			{name: "restartPolicy Always", over: `spec: {template: {spec: {restartPolicy: Always}}}`},
			{name: "no containers", over: `spec: {template: {spec: {containers: null}}}`},
			{name: "negative completions", over: `spec: {completions: -1}`},
			{name: "negative parallelism", over: `spec: {parallelism: -1}`},
			{name: "negative backoffLimit", over: `spec: {backoffLimit: -1}`},
			{name: "selector without manualSelector", over: `spec: {selector: {matchLabels: {a: b}}}`},
			{name: "unknown completionMode", over: `spec: {completionMode: Sometimes}`},
			{name: "backoffLimitPerIndex without Indexed", over: `spec: {backoffLimitPerIndex: 1}`},
			{name: "podFailurePolicy with restartPolicy OnFailure", over: `spec: {template: {spec: {restartPolicy: OnFailure}}, podFailurePolicy: {rules: [{action: FailJob, onExitCodes: {operator: In, values: [1]}}]}}`},
			{name: "update: template changed", update: `spec: {template: {spec: {containers: [{name: app, image: other}]}}}`},
			{name: "update: template changed (PUT)", update: `spec: {template: {spec: {containers: [{name: app, image: other}]}}}`, put: true},
			{name: "update: completions changed", update: `spec: {completions: 3}`},
		}},
	{gv: "batch/v1", resource: "cronjobs", kind: "CronJob", namespaced: true, base: `
spec: {schedule: "*/5 * * * *", jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: app, image: ` + pause + `}]}}}}}`,
		cases: []invalid{
			{name: "bad schedule", over: `spec: {schedule: "every five minutes"}`},
			{name: "TZ in the schedule", over: `spec: {schedule: "TZ=UTC */5 * * * *"}`},
			{name: "unknown timeZone", over: `spec: {timeZone: Mars/Olympus_Mons}`},
			{name: "unknown concurrencyPolicy", over: `spec: {concurrencyPolicy: Sometimes}`},
			{name: "negative startingDeadlineSeconds", over: `spec: {startingDeadlineSeconds: -1}`},
			{name: "no containers", over: `spec: {jobTemplate: {spec: {template: {spec: {containers: null}}}}}`},
			{name: "job restartPolicy Always", over: `spec: {jobTemplate: {spec: {template: {spec: {restartPolicy: Always}}}}}`},
			{name: "name over 52 characters", over: `metadata: {name: ` + strings.Repeat("c", 53) + `}`},
			{name: "update: bad schedule", update: `spec: {schedule: "61 * * * *"}`},
		}},
	{gv: "apps/v1", resource: "statefulsets", kind: "StatefulSet", namespaced: true, base: `
spec: {serviceName: kd, replicas: 1, selector: {matchLabels: {app: kd}}, template: ` + podTemplate + `}`,
		cases: []invalid{
			{name: "no selector", over: `spec: {selector: null}`},
			{name: "selector does not match the template", over: `spec: {template: {metadata: {labels: {app: other}}}}`},
			{name: "unknown podManagementPolicy", over: `spec: {podManagementPolicy: Sometimes}`},
			{name: "OnDelete with rollingUpdate", over: `spec: {updateStrategy: {type: OnDelete, rollingUpdate: {partition: 1}}}`},
			{name: "negative replicas", over: `spec: {replicas: -1}`},
			{name: "template restartPolicy Never", over: `spec: {template: {spec: {restartPolicy: Never}}}`},
			{name: "volumeClaimTemplate without accessModes", over: `spec: {volumeClaimTemplates: [{metadata: {name: data}, spec: {resources: {requests: {storage: 1Gi}}}}]}`},
			{name: "update: serviceName changed", update: `spec: {serviceName: other}`},
			{name: "update: selector changed", update: `spec: {selector: {matchLabels: {app: other}}, template: {metadata: {labels: {app: other}}}}`},
		}},
	{gv: "apps/v1", resource: "daemonsets", kind: "DaemonSet", namespaced: true, base: `
spec: {selector: {matchLabels: {app: kd}}, template: ` + podTemplate + `}`,
		cases: []invalid{
			{name: "no selector", over: `spec: {selector: null}`},
			{name: "selector does not match the template", over: `spec: {template: {metadata: {labels: {app: other}}}}`},
			{name: "template restartPolicy Never", over: `spec: {template: {spec: {restartPolicy: Never}}}`},
			{name: "unknown updateStrategy", over: `spec: {updateStrategy: {type: Sometimes}}`},
			{name: "maxSurge and maxUnavailable both 0", over: `spec: {updateStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 0}}}`},
			{name: "update: selector changed", update: `spec: {selector: {matchLabels: {app: other}}, template: {metadata: {labels: {app: other}}}}`},
		}},
	{gv: "networking.k8s.io/v1", resource: "ingresses", kind: "Ingress", namespaced: true, base: `
spec: {defaultBackend: {service: {name: kd, port: {number: 80}}}}`,
		cases: []invalid{
			{name: "neither defaultBackend nor rules", over: `spec: {defaultBackend: null}`},
			{name: "relative path", over: `spec: {rules: [{http: {paths: [{path: foo, pathType: Prefix, backend: {service: {name: kd, port: {number: 80}}}}]}}]}`},
			{name: "unknown pathType", over: `spec: {rules: [{http: {paths: [{path: /, pathType: Sometimes, backend: {service: {name: kd, port: {number: 80}}}}]}}]}`},
			{name: "backend with a service and a resource", over: `spec: {defaultBackend: {resource: {kind: Bucket, name: b}}}`},
			{name: "service backend without port", over: `spec: {defaultBackend: {service: {name: kd, port: null}}}`},
			{name: "service port with name and number", over: `spec: {defaultBackend: {service: {name: kd, port: {number: 80, name: http}}}}`},
			{name: "wildcard inside a host", over: `spec: {rules: [{host: "foo.*.example.com", http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: kd, port: {number: 80}}}}]}}]}`},
			{name: "bad ingressClassName", over: `spec: {ingressClassName: Bad_Class}`},
			{name: "update: relative path", update: `spec: {rules: [{http: {paths: [{path: foo, pathType: Exact, backend: {service: {name: kd, port: {number: 80}}}}]}}]}`},
		}},
	{gv: "networking.k8s.io/v1", resource: "networkpolicies", kind: "NetworkPolicy", namespaced: true, base: `
spec: {podSelector: {}}`,
		cases: []invalid{
			{name: "unknown policyType", over: `spec: {policyTypes: [Sideways]}`},
			{name: "unknown protocol", over: `spec: {ingress: [{ports: [{protocol: ICMP, port: 80}]}]}`},
			{name: "malformed ipBlock cidr", over: `spec: {ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/33}}]}]}`},
			{name: "except outside the cidr", over: `spec: {ingress: [{from: [{ipBlock: {cidr: 10.0.0.0/16, except: [192.168.0.0/24]}}]}]}`},
			{name: "bad label key in podSelector", over: `spec: {podSelector: {matchLabels: {"bad key!": x}}}`},
			{name: "endPort without port", over: `spec: {ingress: [{ports: [{endPort: 90}]}]}`},
			{name: "endPort below port", over: `spec: {ingress: [{ports: [{port: 90, endPort: 80}]}]}`},
			{name: "endPort with a named port", over: `spec: {ingress: [{ports: [{port: http, endPort: 90}]}]}`},
		}},
	{gv: "rbac.authorization.k8s.io/v1", resource: "roles", kind: "Role", namespaced: true, base: `
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]`,
		cases: []invalid{
			{name: "rule without verbs", over: `rules: [{apiGroups: [""], resources: [configmaps]}]`},
			{name: "rule without apiGroups", over: `rules: [{resources: [configmaps], verbs: [get]}]`},
			{name: "rule without resources", over: `rules: [{apiGroups: [""], verbs: [get]}]`},
			{name: "nonResourceURLs in a Role", over: `rules: [{nonResourceURLs: [/healthz], verbs: [get]}]`},
			{name: "update: rule without verbs", update: `rules: [{apiGroups: [""], resources: [secrets]}]`},
		}},
	{gv: "rbac.authorization.k8s.io/v1", resource: "clusterroles", kind: "ClusterRole", base: `
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]`,
		cases: []invalid{
			{name: "rule without verbs", over: `rules: [{apiGroups: [""], resources: [configmaps]}]`},
			{name: "resources and nonResourceURLs in one rule", over: `rules: [{apiGroups: [""], resources: [configmaps], nonResourceURLs: [/healthz], verbs: [get]}]`},
			{name: "aggregationRule without selectors", over: `aggregationRule: {clusterRoleSelectors: []}`},
			{name: "aggregationRule with a bad selector", over: `aggregationRule: {clusterRoleSelectors: [{matchExpressions: [{key: a, operator: Near}]}]}`},
		}},
	{gv: "rbac.authorization.k8s.io/v1", resource: "rolebindings", kind: "RoleBinding", namespaced: true, base: `
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: kd-role}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: kubediff-user}]`,
		cases: []invalid{
			{name: "unknown roleRef kind", over: `roleRef: {kind: Bogus}`},
			{name: "wrong roleRef apiGroup", over: `roleRef: {apiGroup: example.com}`},
			{name: "roleRef without name", over: `roleRef: {name: null}`},
			{name: "unknown subject kind", over: `subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Robot, name: r}]`},
			{name: "subject without name", over: `subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User}]`},
			{name: "ServiceAccount subject with the rbac apiGroup", over: `subjects: [{apiGroup: rbac.authorization.k8s.io, kind: ServiceAccount, name: default}]`},
			{name: "update: roleRef changed", update: `roleRef: {name: other-role}`},
		}},
	{gv: "rbac.authorization.k8s.io/v1", resource: "clusterrolebindings", kind: "ClusterRoleBinding", base: `
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: kubediff-user}]`,
		cases: []invalid{
			{name: "roleRef to a Role", over: `roleRef: {kind: Role}`},
			{name: "ServiceAccount subject without namespace", over: `subjects: [{kind: ServiceAccount, name: default}]`},
			{name: "Group subject of another apiGroup", over: `subjects: [{apiGroup: example.com, kind: Group, name: g}]`},
			{name: "ServiceAccount subject with a bad name", over: `subjects: [{kind: ServiceAccount, name: Bad_Name, namespace: default}]`},
			{name: "update: roleRef changed", update: `roleRef: {name: edit}`},
			{name: "update: roleRef changed (PUT)", update: `roleRef: {name: edit}`, put: true},
		}},
}

// TestInvalidObjects sends, per common kind, objects and updates kube refuses, and compares the
// errors whole: code, reason, message and details (causes).
func TestInvalidObjects(t *testing.T) {
	servers(t)
	for _, k := range invalidKinds {
		t.Run(k.resource+"."+strings.ReplaceAll(k.gv, "/", "."), func(t *testing.T) { runInvalid(t, k) })
	}
}

func runInvalid(t *testing.T, k invalidKind) {
	ns := ""
	if k.namespaced {
		ns = namespaceFor("kdi-", k.resource, k.gv)
		freshNamespace(t, ns)
	}
	coll := collectionIn(k.gv, k.resource, ns)
	base := toJSON(t, k.base)
	base = merged(t, base, `{"apiVersion":"`+k.gv+`","kind":"`+k.kind+`","metadata":{"name":"kdi-base","labels":{"kubediff":"invalid"}}}`)
	targets := []*target{env.kube}
	if !kubeOnly {
		targets = append(targets, env.lapis)
	}
	for _, s := range targets {
		s.must(t, request{method: "DELETE", path: coll + "/kdi-base"}, http.StatusOK, http.StatusNotFound)
		finishDeletion(t, s, coll+"/kdi-base")
		s.must(t, request{method: "POST", path: coll, contentType: jsonType, body: base}, http.StatusCreated)
	}
	for _, c := range k.cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.kube
			if want == 0 {
				want = http.StatusUnprocessableEntity
			}
			if c.update == "" {
				body := merged(t, merged(t, base, `{"metadata":{"name":"kdi-new"}}`), toJSON(t, c.over))
				r := request{method: "POST", path: coll + c.query, contentType: jsonType, body: body}
				p := exchangeWith(r, r, acceptJSON)
				expectAndCompare(t, r, acceptJSON, p, want)
				cleanUpCreated(t, coll, body, p)
				return
			}
			patch := toJSON(t, c.update)
			path := coll + "/kdi-base" + c.query
			if !c.put {
				r := request{method: "PATCH", path: path, contentType: mergeType, body: patch}
				expectAndCompare(t, r, acceptJSON, exchangeWith(r, r, acceptJSON), want)
				return
			}
			edit := func(o map[string]any) {
				b, _ := json.Marshal(o)
				var m map[string]any
				if err := json.Unmarshal([]byte(merged(t, string(b), patch)), &m); err != nil {
					t.Fatal(err)
				}
				clear(o)
				for k, v := range m {
					o[k] = v
				}
			}
			rl, rk := request{method: "PUT", path: path, contentType: jsonType}, request{method: "PUT", path: path, contentType: jsonType}
			rk.body = edited(t, env.kube, coll+"/kdi-base", edit)
			if !kubeOnly {
				rl.body = edited(t, env.lapis, coll+"/kdi-base", edit)
			}
			shown := request{method: "PUT", path: path, contentType: jsonType, body: "(each server's own object, with " + patch + ")"}
			expectAndCompare(t, shown, acceptJSON, exchangeWith(rl, rk, acceptJSON), want)
		})
	}
}

// cleanUpCreated deletes what a server wrongly created, so that later cases start alike.
func cleanUpCreated(t *testing.T, coll, body string, p pair) {
	var o struct {
		Metadata struct{ Name string } `json:"metadata"`
	}
	if json.Unmarshal([]byte(body), &o) != nil || o.Metadata.Name == "" {
		return
	}
	for _, x := range []struct {
		s *target
		a answer
	}{{env.kube, p.kube}, {env.lapis, p.lapis}} {
		if x.a.code == http.StatusCreated {
			x.s.do(request{method: "DELETE", path: coll + "/" + o.Metadata.Name})
			finishDeletion(t, x.s, coll+"/"+o.Metadata.Name)
		}
	}
}

func toJSON(t *testing.T, y string) string {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("fixture: %v: %s", err, y)
	}
	return string(j)
}

// merged is doc with the RFC 7386 merge patch applied.
func merged(t *testing.T, doc, patch string) string {
	t.Helper()
	out, err := jsonpatch.MergePatch([]byte(doc), []byte(patch))
	if err != nil {
		t.Fatalf("fixture: merging %s into %s: %v", patch, doc, err)
	}
	return string(out)
}

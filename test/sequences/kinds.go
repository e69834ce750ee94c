package sequences

import (
	"fmt"
	"math/rand/v2"
)

// kind is what a sequence writes: its API, the shape of its spec (and status), and what it
// serves.
type kind struct {
	resource   string // plural
	apiVersion string
	kind       string
	// top holds the fields a write sets beside metadata (spec, data, ...).
	top *node
	// status is the status subresource's content; nil when there is none.
	status *node
	// scale says whether the scale subresource is served.
	scale bool
	// builtin kinds take strategic merge patches.
	builtin bool
	crd     map[string]any // the CustomResourceDefinition to create, for custom resources
}

// path is the object's path in namespace ns.
func (k *kind) path(ns, name string) string {
	prefix := "/apis/" + k.apiVersion
	if k.apiVersion == "v1" {
		prefix = "/api/v1"
	}
	return fmt.Sprintf("%s/namespaces/%s/%s/%s", prefix, ns, k.resource, name)
}

// CRDGroup is the group of the custom resources in the pool.
const CRDGroup = "sequences.lapis.test"

// poolSeed makes the pool of custom resource schemas: recorded outcomes depend on it.
const poolSeed = 20261202

// crdPool is the custom resource kinds, each with a random spec and status under kube's
// scale paths (.spec.replicas, .status.replicas).
func crdPool(size int) []*kind {
	r := rand.New(rand.NewPCG(poolSeed, 0))
	pool := make([]*kind, size)
	for i := range pool {
		spec := &node{shape: object, fields: append(randomFields(r, 2, ""), field{name: "replicas", node: &node{shape: integer}})}
		status := &node{shape: object, fields: append(randomFields(r, 1, "s"), field{name: "replicas", node: &node{shape: integer}})}
		k := &kind{
			resource: fmt.Sprintf("t%ds", i), apiVersion: CRDGroup + "/v1", kind: fmt.Sprintf("T%d", i),
			top:    &node{shape: object, fields: []field{{name: "spec", node: spec}}},
			status: &node{shape: object, fields: []field{{name: "status", node: status}}},
			scale:  true,
		}
		k.crd = crdOf(k, spec, status)
		pool[i] = k
	}
	return pool
}

func crdOf(k *kind, spec, status *node) map[string]any {
	// spec and its replicas have defaults: kube's scale subresource answers 500 for a custom
	// resource without spec replicas, which would end most sequences that scale.
	specSchema := spec.openAPI()
	specSchema["default"] = map[string]any{}
	specSchema["properties"].(map[string]any)["replicas"] = map[string]any{"type": "integer", "default": int64(1)}
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"spec": specSchema, "status": status.openAPI()}}
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": k.resource + "." + CRDGroup},
		"spec": map[string]any{
			"group": CRDGroup, "scope": "Namespaced",
			"names": map[string]any{"plural": k.resource, "kind": k.kind},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": schema},
				"subresources": map[string]any{"status": map[string]any{}, "scale": map[string]any{
					"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
			}},
		},
	}
}

func obj(fields ...field) *node    { return &node{shape: object, fields: fields} }
func f(name string, n *node) field { return field{name: name, node: n} }
func req(name string, n *node) field {
	return field{name: name, node: n, required: true}
}
func strOf(values ...any) *node { return &node{shape: str, enum: values} }
func intOf(values ...any) *node { return &node{shape: integer, enum: values} }
func fixed(value any) *node     { return &node{shape: constant, enum: []any{value}} }
func listOf(keys []string, fields ...field) *node {
	return &node{shape: listMap, keys: keys, fields: fields}
}

// conditions are a status's conditions, keyed by type as kube's types mark them.
func conditions(types ...any) *node {
	return listOf([]string{"type"}, req("type", strOf(types...)), req("status", strOf("True", "False")),
		f("reason", strOf("R1", "R2")), f("message", &node{shape: str}))
}

// builtinKinds are the built-in kinds sequences write, with the fields of each a manager
// sets (small vocabularies: names that collide, values that validate).
func builtinKinds() []*kind {
	container := []field{req("name", strOf("a", "b")), req("image", strOf("nginx", "busybox")),
		f("args", &node{shape: atomicList}),
		f("env", listOf([]string{"name"}, req("name", strOf("A", "B")), f("value", &node{shape: str}))),
		f("ports", listOf([]string{"containerPort", "protocol"}, req("containerPort", intOf(int64(80), int64(81))),
			req("protocol", strOf("TCP", "UDP"))))}
	deployment := &kind{resource: "deployments", apiVersion: "apps/v1", kind: "Deployment", builtin: true, scale: true,
		top: obj(f("spec", obj(
			f("replicas", &node{shape: integer}), f("minReadySeconds", &node{shape: integer}),
			req("selector", fixed(map[string]any{"matchLabels": map[string]any{"app": "web"}})),
			req("template", obj(
				req("metadata", fixed(map[string]any{"labels": map[string]any{"app": "web"}})),
				req("spec", obj(req("containers", listOf([]string{"name"}, container...)),
					f("nodeSelector", &node{shape: granular})))))))),
		status: obj(f("status", obj(f("replicas", &node{shape: integer}), f("observedGeneration", &node{shape: integer}),
			f("conditions", conditions("Available", "Progressing"))))),
	}
	return []*kind{
		{resource: "configmaps", apiVersion: "v1", kind: "ConfigMap", builtin: true,
			top: obj(f("data", &node{shape: granular}))},
		deployment,
		{resource: "services", apiVersion: "v1", kind: "Service", builtin: true,
			top: obj(f("spec", obj(f("type", strOf("ClusterIP", "NodePort")), f("selector", &node{shape: granular}),
				req("ports", listOf([]string{"port", "protocol"}, req("port", intOf(int64(80), int64(81))),
					req("protocol", strOf("TCP", "UDP")), f("name", strOf("a", "b")), f("targetPort", intOf(int64(8080)))))))),
			status: obj(f("status", obj(f("conditions", listOf([]string{"type"}, req("type", strOf("A", "B")),
				req("status", strOf("True", "False")), req("reason", strOf("R1", "R2")), req("message", &node{shape: str}),
				req("lastTransitionTime", fixed("2026-01-01T00:00:00Z"))))))),
		},
		{resource: "pods", apiVersion: "v1", kind: "Pod", builtin: true,
			top: obj(f("spec", obj(req("containers", listOf([]string{"name"}, container[:3]...)),
				f("activeDeadlineSeconds", &node{shape: integer})))),
			status: obj(f("status", obj(f("conditions", conditions("Ready", "Custom"))))),
		},
	}
}

// metadata is what managers set in an object's metadata beside its name.
var metadata = obj(f("labels", &node{shape: granular}), f("annotations", &node{shape: granular}))

package fieldmanager_test

// Fixtures for list conventions (conventions.Annotation): the seed's CatSet walkthrough, each
// limitation of Metacontroller's convention, schema markers overriding it, and the same
// requests on a CRD without the annotation, which behave as kube-apiserver's.

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// conventionCRDs: CatSet as in the seed (an embedded Pod template under
// x-kubernetes-preserve-unknown-fields), with and without the annotation; Conv, annotated, with
// a schema that marks some lists and leaves others unmarked; ConvBare, annotated, with no
// schema; ConvVersioned, annotated, with two versions.
var conventionCRDs = []string{`
metadata:
  name: catsets.ctl.enisoc.com
  annotations: {apply.lapis.dev/list-conventions: metacontroller}
spec:
  group: ctl.enisoc.com
  names: {kind: CatSet, plural: catsets, singular: catset}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, `
metadata: {name: plaincatsets.ctl.enisoc.com}
spec:
  group: ctl.enisoc.com
  names: {kind: PlainCatSet, plural: plaincatsets, singular: plaincatset}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, `
metadata:
  name: convs.diff.example.com
  annotations: {apply.lapis.dev/list-conventions: metacontroller}
spec:
  group: diff.example.com
  names: {kind: Conv, plural: convs, singular: conv}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              unmarked: {type: array, items: {type: object, properties: {name: {type: string}, value: {type: string}}}}
              atomic:
                type: array
                x-kubernetes-list-type: atomic
                items: {type: object, properties: {name: {type: string}, value: {type: string}}}
              byID:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [id]
                items:
                  type: object
                  required: [id]
                  properties:
                    id: {type: string}
                    name: {type: string}
                    mounts: {type: array, items: {type: object, x-kubernetes-preserve-unknown-fields: true}}
              fixed:
                type: object
                x-kubernetes-map-type: atomic
                x-kubernetes-preserve-unknown-fields: true
              free: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, `
metadata:
  name: convbares.diff.example.com
  annotations: {apply.lapis.dev/list-conventions: metacontroller}
spec:
  group: diff.example.com
  names: {kind: ConvBare, plural: convbares, singular: convbare}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true}
`, `
metadata:
  name: convversioned.diff.example.com
  annotations: {apply.lapis.dev/list-conventions: metacontroller}
spec:
  group: diff.example.com
  names: {kind: ConvVersioned, plural: convversioned, singular: convversioned}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}
  - name: v2
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}
`}

func init() {
	fixtureCRDs = append(fixtureCRDs, conventionCRDs...)
	fixtureResources["catsets"] = gvr("ctl.enisoc.com", "catsets")
	fixtureResources["plaincatsets"] = gvr("ctl.enisoc.com", "plaincatsets")
	fixtureResources["convs"] = gvr("diff.example.com", "convs")
	fixtureResources["convbares"] = gvr("diff.example.com", "convbares")
	fixtureResources["convversioned"] = gvr("diff.example.com", "convversioned")
}

const ctl = "ctl.enisoc.com/v1"

// The seed's CatSet, and what an injector adds to it.
const (
	catSet = `{spec: {template: {metadata: {labels: {app: nginx}}, spec: {containers: [
	  {name: nginx, image: nginx, ports: [{containerPort: 80, name: web}]}]}}}}`
	catSetNewImage = `{spec: {template: {metadata: {labels: {app: nginx}}, spec: {containers: [
	  {name: nginx, image: "nginx:1.27", ports: [{containerPort: 80, name: web}]}]}}}}`
	sidecar = `{spec: {template: {spec: {containers: [
	  {name: nginx, ports: [{containerPort: 9090, name: metrics}]},
	  {name: sidecar, image: log-uploader}]}}}}`
)

func TestListConventionFixtures(t *testing.T) {
	f := newFixture(t)
	for name, tc := range conventionCases {
		t.Run(name, func(t *testing.T) { tc.test(t, f, objectName(name)) })
	}
}

// Paths of the CatSet's lists, in Entry notation.
const (
	containers = ".spec.template.spec.containers"
	nginx      = containers + `[name="nginx"]`
	sidecarC   = containers + `[name="sidecar"]`
)

var conventionCases = map[string]TestCase{
	// The seed's walkthrough: the user applies the CatSet, an injector adds a sidecar
	// container and a port, the user re-applies a changed image. Nothing conflicts, the
	// sidecar and the port survive; containers are keyed by name, ports by containerPort (it
	// comes before name in Metacontroller's order).
	"seed walkthrough": {
		Resource: "catsets",
		Ops: []Operation{
			Apply{Manager: "kubectl", Object: catSet},
			Apply{Manager: "injector", Object: sidecar},
			Apply{Manager: "kubectl", Object: catSetNewImage},
		},
		Object: `{spec: {template: {metadata: {labels: {app: nginx}}, spec: {containers: [
		  {name: nginx, image: "nginx:1.27", ports: [{containerPort: 80, name: web}, {containerPort: 9090, name: metrics}]},
		  {name: sidecar, image: log-uploader}]}}}}`,
		Managed: []Entry{
			applied("injector", ctl, nginx, nginx+".name",
				nginx+".ports[containerPort=9090]", nginx+".ports[containerPort=9090].containerPort", nginx+".ports[containerPort=9090].name",
				sidecarC, sidecarC+".image", sidecarC+".name"),
			applied("kubectl", ctl, ".spec.template.metadata", ".spec.template.metadata.labels",
				".spec.template.metadata.labels.app", nginx, nginx+".image", nginx+".name",
				nginx+".ports[containerPort=80]", nginx+".ports[containerPort=80].containerPort", nginx+".ports[containerPort=80].name"),
		},
	},
	// The same requests without the annotation: kube-apiserver's atomic lists. The injector
	// conflicts on the containers, and forcing replaces the user's.
	"seed walkthrough without the opt-in": {
		Resource: "plaincatsets",
		Ops: []Operation{
			Apply{Manager: "kubectl", Object: catSet},
			Apply{Manager: "injector", Object: sidecar,
				Err: `Apply failed with 1 conflict: conflict with "kubectl": .spec.template.spec.containers`},
			ForceApply{Manager: "injector", Object: sidecar},
		},
		Object: `{spec: {template: {metadata: {labels: {app: nginx}}, spec: {containers: [
		  {name: nginx, ports: [{containerPort: 9090, name: metrics}]}, {name: sidecar, image: log-uploader}]}}}}`,
		Managed: []Entry{
			applied("injector", ctl, ".spec.template", ".spec.template.spec", containers),
			applied("kubectl", ctl, ".spec.template", ".spec.template.metadata", ".spec.template.metadata.labels",
				".spec.template.metadata.labels.app", ".spec.template.spec"),
		},
	},
	// An update (a controller's PUT) adding the sidecar owns it item by item, too.
	"sidecar added by update": {
		Resource: "catsets",
		Ops: []Operation{
			Apply{Manager: "kubectl", Object: catSet},
			Update{Manager: "injector", Object: `{spec: {template: {metadata: {labels: {app: nginx}}, spec: {containers: [
			  {name: nginx, image: nginx, ports: [{containerPort: 80, name: web}]}, {name: sidecar, image: log-uploader}]}}}}`},
			Apply{Manager: "kubectl", Object: catSetNewImage},
		},
		Object: `{spec: {template: {metadata: {labels: {app: nginx}}, spec: {containers: [
		  {name: nginx, image: "nginx:1.27", ports: [{containerPort: 80, name: web}]}, {name: sidecar, image: log-uploader}]}}}}`,
		Managed: []Entry{
			applied("kubectl", ctl, ".spec.template.metadata", ".spec.template.metadata.labels",
				".spec.template.metadata.labels.app", nginx, nginx+".image", nginx+".name",
				nginx+".ports[containerPort=80]", nginx+".ports[containerPort=80].containerPort", nginx+".ports[containerPort=80].name"),
			updated("injector", ctl, sidecarC, sidecarC+".image", sidecarC+".name"),
		},
	},
	// Conflicts are per item and per field, and force takes just the field.
	"conflict on an item's field, then force": {
		Resource: "catsets",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {env: [{name: A, value: "1"}, {name: B, value: "2"}]}}`},
			Apply{Manager: "b", Object: `{spec: {env: [{name: B, value: "3"}]}}`,
				Err: `Apply failed with 1 conflict: conflict with "a": .spec.env[name="B"].value`},
			ForceApply{Manager: "b", Object: `{spec: {env: [{name: B, value: "3"}]}}`},
		},
		Object: `{spec: {env: [{name: A, value: "1"}, {name: B, value: "3"}]}}`,
		Managed: []Entry{
			applied("a", ctl, `.spec.env[name="A"]`, `.spec.env[name="A"].name`, `.spec.env[name="A"].value`,
				`.spec.env[name="B"]`, `.spec.env[name="B"].name`),
			applied("b", ctl, `.spec.env[name="B"]`, `.spec.env[name="B"].name`, `.spec.env[name="B"].value`),
		},
	},
	// Shared ownership of an item; it goes when its last owner stops applying it.
	"shared item and removal": {
		Resource: "catsets",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {volumes: [{name: data, emptyDir: {}}, {name: cache}]}}`},
			Apply{Manager: "b", Object: `{spec: {volumes: [{name: data, emptyDir: {}}]}}`},
			Apply{Manager: "a", Object: `{spec: {replicas: 1}}`},
		},
		Object: `{spec: {replicas: 1, volumes: [{name: data, emptyDir: {}}]}}`,
		Managed: []Entry{
			applied("a", ctl, ".spec.replicas"),
			applied("b", ctl, `.spec.volumes[name="data"]`, `.spec.volumes[name="data"].emptyDir`, `.spec.volumes[name="data"].name`).untimed(),
		},
	},
	"item removed with its last owner": {
		Resource: "catsets",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {volumes: [{name: data, emptyDir: {}}, {name: cache}]}}`},
			Apply{Manager: "b", Object: `{spec: {volumes: [{name: data, emptyDir: {}}]}}`},
			Apply{Manager: "a", Object: `{spec: {volumes: [{name: data, emptyDir: {}}]}}`},
			Apply{Manager: "b", Object: `{spec: {volumes: [{name: logs}]}}`},
		},
		Object: `{spec: {volumes: [{name: data, emptyDir: {}}, {name: logs}]}}`,
		Managed: []Entry{
			applied("a", ctl, `.spec.volumes[name="data"]`, `.spec.volumes[name="data"].emptyDir`, `.spec.volumes[name="data"].name`),
			applied("b", ctl, `.spec.volumes[name="logs"]`, `.spec.volumes[name="logs"].name`),
		},
	},
	// Limitation "atomic object lists": a list whose items share a conventional key merges by
	// it; only a schema marker keeps it atomic.
	"objects sharing a key merge": {
		Resource: "catsets",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {hosts: [{ip: 10.0.0.1, names: [a]}]}}`},
			Apply{Manager: "b", Object: `{spec: {hosts: [{ip: 10.0.0.2, names: [b]}]}}`},
		},
		Object: `{spec: {hosts: [{ip: 10.0.0.1, names: [a]}, {ip: 10.0.0.2, names: [b]}]}}`,
		Managed: []Entry{
			applied("a", ctl, `.spec.hosts[ip="10.0.0.1"]`, `.spec.hosts[ip="10.0.0.1"].ip`, `.spec.hosts[ip="10.0.0.1"].names`),
			applied("b", ctl, `.spec.hosts[ip="10.0.0.2"]`, `.spec.hosts[ip="10.0.0.2"].ip`, `.spec.hosts[ip="10.0.0.2"].names`),
		},
	},
	"schema marker atomic wins": {
		Resource: "convs",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {atomic: [{name: x, value: "1"}]}}`},
			Apply{Manager: "b", Object: `{spec: {atomic: [{name: "y", value: "2"}]}}`,
				Err: `Apply failed with 1 conflict: conflict with "a": .spec.atomic`},
		},
		Object: `{spec: {atomic: [{name: x, value: "1"}]}}`,
		Managed: []Entry{
			applied("a", v1, ".spec.atomic"),
		},
	},
	// A list map of the schema keeps its own key (id, not the conventional name), and an
	// unmarked list inside its items follows the convention.
	"schema list map keeps its key": {
		Resource: "convs",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {byID: [{id: "1", name: same, mounts: [{mountPath: /a}]}]}}`},
			Apply{Manager: "b", Object: `{spec: {byID: [{id: "2", name: same}, {id: "1", mounts: [{mountPath: /b}]}]}}`},
		},
		Object: `{spec: {byID: [{id: "2", name: same}, {id: "1", name: same, mounts: [{mountPath: /a}, {mountPath: /b}]}]}}`,
		Managed: []Entry{
			applied("a", v1, `.spec.byID[id="1"]`, `.spec.byID[id="1"].id`, `.spec.byID[id="1"].mounts[mountPath="/a"]`,
				`.spec.byID[id="1"].mounts[mountPath="/a"].mountPath`, `.spec.byID[id="1"].name`),
			applied("b", v1, `.spec.byID[id="1"]`, `.spec.byID[id="1"].id`, `.spec.byID[id="1"].mounts[mountPath="/b"]`,
				`.spec.byID[id="1"].mounts[mountPath="/b"].mountPath`, `.spec.byID[id="2"]`, `.spec.byID[id="2"].id`, `.spec.byID[id="2"].name`),
		},
	},
	// A typed list without a list type is the convention's too; an atomic map is not.
	"unmarked typed list and atomic map": {
		Resource: "convs",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {unmarked: [{name: x, value: "1"}], fixed: {list: [{name: x}]}}}`},
			Apply{Manager: "b", Object: `{spec: {unmarked: [{name: "y", value: "2"}]}}`},
			Apply{Manager: "b", Object: `{spec: {unmarked: [{name: "y", value: "2"}], fixed: {list: [{name: "y"}]}}}`,
				Err: `Apply failed with 1 conflict: conflict with "a": .spec.fixed`},
		},
		Object: `{spec: {unmarked: [{name: x, value: "1"}, {name: "y", value: "2"}], fixed: {list: [{name: x}]}}}`,
		Managed: []Entry{
			applied("a", v1, ".spec.fixed", `.spec.unmarked[name="x"]`, `.spec.unmarked[name="x"].name`, `.spec.unmarked[name="x"].value`),
			applied("b", v1, `.spec.unmarked[name="y"]`, `.spec.unmarked[name="y"].name`, `.spec.unmarked[name="y"].value`),
		},
	},
	// Limitation "unconventional keys": items sharing only a key outside the convention (id)
	// leave the list atomic.
	"unconventional key stays atomic": {
		Resource: "catsets",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {rules: [{id: r1, allow: true}]}}`},
			Apply{Manager: "b", Object: `{spec: {rules: [{id: r2, allow: false}]}}`,
				Err: `Apply failed with 1 conflict: conflict with "a": .spec.rules`},
		},
		Object: `{spec: {rules: [{id: r1, allow: true}]}}`,
		Managed: []Entry{
			applied("a", ctl, ".spec.rules"),
		},
	},
	// Limitation "multi-field keys": a port is keyed by containerPort alone, so the same port
	// number with another protocol is the same item, and its protocol conflicts.
	"multi-field key is one field": {
		Resource: "catsets",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {ports: [{containerPort: 53, protocol: TCP}]}}`},
			Apply{Manager: "b", Object: `{spec: {ports: [{containerPort: 53, protocol: UDP}]}}`,
				Err: `Apply failed with 1 conflict: conflict with "a": .spec.ports[containerPort=53].protocol`},
		},
		Object: `{spec: {ports: [{containerPort: 53, protocol: TCP}]}}`,
		Managed: []Entry{
			applied("a", ctl, ".spec.ports[containerPort=53]", ".spec.ports[containerPort=53].containerPort",
				".spec.ports[containerPort=53].protocol"),
		},
	},
	// Where the one field repeats in one list, the list cannot be keyed by it: atomic.
	"repeated key value stays atomic": {
		Resource: "catsets",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {ports: [{containerPort: 53, protocol: TCP}, {containerPort: 53, protocol: UDP}]}}`},
			Apply{Manager: "b", Object: `{spec: {ports: [{containerPort: 80}]}}`,
				Err: `Apply failed with 1 conflict: conflict with "a": .spec.ports`},
		},
		Object: `{spec: {ports: [{containerPort: 53, protocol: TCP}, {containerPort: 53, protocol: UDP}]}}`,
		Managed: []Entry{
			applied("a", ctl, ".spec.ports"),
		},
	},
	// Limitation "scalar-valued associative lists": lists of scalars stay atomic.
	"scalar list stays atomic": {
		Resource: "catsets",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {args: [--verbose]}}`},
			Apply{Manager: "b", Object: `{spec: {args: [--quiet]}}`,
				Err: `Apply failed with 1 conflict: conflict with "a": .spec.args`},
		},
		Object: `{spec: {args: [--verbose]}}`,
		Managed: []Entry{
			applied("a", ctl, ".spec.args"),
		},
	},
	// An item that stops carrying the key makes the list atomic for that merge: the per-item
	// owners become owners of the whole list (nothing is forgotten), so the applier conflicts
	// with them, and forcing takes the list.
	"item without the key turns the list atomic": {
		Resource: "catsets",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {env: [{name: A, value: "1"}]}}`},
			Apply{Manager: "b", Object: `{spec: {env: [{name: B, value: "2"}]}}`},
			Apply{Manager: "c", Object: `{spec: {env: [{value: "3"}]}}`,
				Err: "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.env\nconflicts with \"b\":\n- .spec.env"},
			ForceApply{Manager: "c", Object: `{spec: {env: [{value: "3"}]}}`},
		},
		Object: `{spec: {env: [{value: "3"}]}}`,
		Managed: []Entry{
			applied("c", ctl, ".spec.env"),
		},
	},
	// managedFields keep a list keyed as it was: once items are owned by name, items gaining a
	// port (which comes first in the order) stay keyed by name.
	"recorded key is kept": {
		Resource: "catsets",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {backends: [{name: x}]}}`},
			Apply{Manager: "a", Object: `{spec: {backends: [{name: x, port: 1}]}}`},
			Apply{Manager: "b", Object: `{spec: {backends: [{name: "y", port: 2}]}}`},
		},
		Object: `{spec: {backends: [{name: x, port: 1}, {name: "y", port: 2}]}}`,
		Managed: []Entry{
			applied("a", ctl, `.spec.backends[name="x"]`, `.spec.backends[name="x"].name`, `.spec.backends[name="x"].port`),
			applied("b", ctl, `.spec.backends[name="y"]`, `.spec.backends[name="y"].name`, `.spec.backends[name="y"].port`),
		},
	},
	// Without managedFields to go by, the first key in the order wins.
	"first key in order": {
		Resource: "catsets",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {backends: [{name: x, port: 1}]}}`},
		},
		Object: `{spec: {backends: [{name: x, port: 1}]}}`,
		Managed: []Entry{
			applied("a", ctl, `.spec.backends[port=1]`, `.spec.backends[port=1].name`, `.spec.backends[port=1].port`),
		},
	},
	// A CRD with no schema at all follows the convention outside metadata.
	"no schema": {
		Resource: "convbares",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {volumes: [{name: x}]}}`},
			Apply{Manager: "b", Object: `{spec: {volumes: [{name: "y"}]}}`},
		},
		Object: `{spec: {volumes: [{name: x}, {name: "y"}]}}`,
		Managed: []Entry{
			applied("a", v1, `.spec.volumes[name="x"]`, `.spec.volumes[name="x"].name`),
			applied("b", v1, `.spec.volumes[name="y"]`, `.spec.volumes[name="y"].name`),
		},
	},
	// Managers of two versions own items of one list map; conflicts are found across versions.
	"two versions": {
		Resource: "convversioned",
		Ops: []Operation{
			Apply{Manager: "a", Object: `{spec: {env: [{name: A, value: "1"}]}}`},
			Apply{Manager: "b", Version: "v2", Object: `{spec: {env: [{name: B, value: "2"}]}}`},
			Apply{Manager: "c", Object: `{spec: {env: [{name: B, value: "3"}]}}`,
				Err: `Apply failed with 1 conflict: conflict with "b": .spec.env[name="B"].value`},
		},
		Object: `{spec: {env: [{name: A, value: "1"}, {name: B, value: "2"}]}}`,
		Managed: []Entry{
			applied("a", v1, `.spec.env[name="A"]`, `.spec.env[name="A"].name`, `.spec.env[name="A"].value`),
			applied("b", v2, `.spec.env[name="B"]`, `.spec.env[name="B"].name`, `.spec.env[name="B"].value`),
		},
	},
}

func gvr(group, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource}
}

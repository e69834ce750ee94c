package acceptance

import (
	"strings"
	"testing"
)

// The Metacontroller seed's CatSet under kubectl's server-side apply, with lapis's opt-in
// annotation for list conventions (apply.lapis.dev/list-conventions: metacontroller), and the
// same requests on a CRD without it, which answer as kube-apiserver does (atomic lists).

// catSetCRD is the seed's CatSet: an embedded Pod template under preserve-unknown-fields, plus
// one list the schema marks atomic. %s is the plural, %s the kind, %s the annotations.
func catSetCRD(plural, kind, annotations string) string {
	return strings.NewReplacer("PLURAL", plural, "KIND", kind, "ANNOTATIONS", annotations).Replace(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: PLURAL.ctl.enisoc.com
  annotations: ANNOTATIONS
spec:
  group: ctl.enisoc.com
  scope: Namespaced
  names: {plural: PLURAL, kind: KIND}
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
            x-kubernetes-preserve-unknown-fields: true
            properties:
              fixed:
                type: array
                x-kubernetes-list-type: atomic
                items: {type: object, x-kubernetes-preserve-unknown-fields: true}
`)
}

func catSet(kind, name, spec string) string {
	return "apiVersion: ctl.enisoc.com/v1\nkind: " + kind + "\nmetadata: {name: " + name + ", namespace: cats}\nspec: " + spec + "\n"
}

const (
	seedSpec = `{template: {metadata: {labels: {app: nginx}}, spec: {containers: [
    {name: nginx, image: nginx, ports: [{containerPort: 80, name: web}]}]}}}`
	seedSidecar = `{template: {spec: {containers: [
    {name: nginx, ports: [{containerPort: 9090, name: metrics}]},
    {name: sidecar, image: log-uploader}]}}}`
	seedNewImage = `{template: {metadata: {labels: {app: nginx}}, spec: {containers: [
    {name: nginx, image: "nginx:1.27", ports: [{containerPort: 80, name: web}]}]}}}`
)

func TestListConventions(t *testing.T) {
	t.Parallel()
	l := startLapis(t)
	l.must(t, "create", "ns", "cats")
	ssa := func(manager, doc string) (string, string, error) {
		return l.kubectlIn(doc, "apply", "--server-side", "--field-manager="+manager, "-f", "-")
	}
	mustSSA := func(t *testing.T, manager, doc string) {
		t.Helper()
		if out, errOut, err := ssa(manager, doc); err != nil {
			t.Fatalf("apply as %s: %v\n%s%s", manager, err, out, errOut)
		}
	}
	conflicts := func(t *testing.T, manager, doc, want string) {
		t.Helper()
		out, errOut, err := ssa(manager, doc)
		if err == nil {
			t.Fatalf("apply as %s succeeded, want a conflict: %s", manager, out)
		}
		wantContains(t, "conflict", errOut, want)
	}

	t.Run("other values are refused", func(t *testing.T) {
		wantEqual(t, "refused", strings.TrimSpace(l.fails(t, catSetCRD("badcats", "BadCat", "{apply.lapis.dev/list-conventions: strategic}"), "apply", "-f", "-")),
			`The CustomResourceDefinition "badcats.ctl.enisoc.com" is invalid: metadata.annotations[apply.lapis.dev/list-conventions]: Unsupported value: "strategic": supported values: "metacontroller"`)
	})

	l.applyCRD(t, catSetCRD("catsets", "CatSet", "{apply.lapis.dev/list-conventions: metacontroller}"), "catsets.ctl.enisoc.com")
	l.applyCRD(t, catSetCRD("plaincatsets", "PlainCatSet", "{}"), "plaincatsets.ctl.enisoc.com")

	t.Run("the seed's walkthrough", func(t *testing.T) {
		mustSSA(t, "kubectl", catSet("CatSet", "my-catset", seedSpec))
		mustSSA(t, "injector", catSet("CatSet", "my-catset", seedSidecar))
		mustSSA(t, "kubectl", catSet("CatSet", "my-catset", seedNewImage))
		wantEqual(t, "containers", l.must(t, "get", "catset", "my-catset", "-n", "cats", "-o",
			`jsonpath={range .spec.template.spec.containers[*]}{.name}={.image}:{.ports[*].containerPort} {end}`),
			"nginx=nginx:1.27:80 9090 sidecar=log-uploader: ")
		wantEqual(t, "managers", l.must(t, "get", "catset", "my-catset", "-n", "cats", "--show-managed-fields", "-o",
			`jsonpath={range .metadata.managedFields[*]}{.manager}:{.operation} {end}`), "injector:Apply kubectl:Apply ")
		fields := l.must(t, "get", "catset", "my-catset", "-n", "cats", "--show-managed-fields", "-o",
			`jsonpath={.metadata.managedFields[?(@.manager=="injector")].fieldsV1}`)
		wantContains(t, "injector's fields", fields, `"k:{\"name\":\"sidecar\"}"`)
		wantContains(t, "injector's fields", fields, `"k:{\"containerPort\":9090}"`)
	})

	t.Run("the same requests without the annotation", func(t *testing.T) {
		mustSSA(t, "kubectl", catSet("PlainCatSet", "my-catset", seedSpec))
		conflicts(t, "injector", catSet("PlainCatSet", "my-catset", seedSidecar),
			`conflict with "kubectl": .spec.template.spec.containers`)
		if out, errOut, err := l.kubectlIn(catSet("PlainCatSet", "my-catset", seedSidecar),
			"apply", "--server-side", "--force-conflicts", "--field-manager=injector", "-f", "-"); err != nil {
			t.Fatalf("forced apply: %v %s%s", err, out, errOut)
		}
		wantEqual(t, "user's containers replaced", l.must(t, "get", "plaincatset", "my-catset", "-n", "cats", "-o",
			`jsonpath={range .spec.template.spec.containers[*]}{.name}={.image} {end}`), "nginx= sidecar=log-uploader ")
	})

	// The seed's Limitations: each shows the documented behaviour.
	t.Run("atomic object lists need a schema marker", func(t *testing.T) {
		mustSSA(t, "a", catSet("CatSet", "atomic", `{hosts: [{ip: 10.0.0.1}], fixed: [{name: x}]}`))
		mustSSA(t, "b", catSet("CatSet", "atomic", `{hosts: [{ip: 10.0.0.2}]}`)) // merged by ip
		conflicts(t, "b", catSet("CatSet", "atomic", `{fixed: [{name: y}]}`), `conflict with "a": .spec.fixed`)
		wantEqual(t, "hosts", l.must(t, "get", "catset", "atomic", "-n", "cats", "-o", `jsonpath={.spec.hosts[*].ip}`), "10.0.0.1 10.0.0.2")
	})
	t.Run("unconventional keys stay atomic", func(t *testing.T) {
		mustSSA(t, "a", catSet("CatSet", "unconventional", `{rules: [{id: r1}]}`))
		conflicts(t, "b", catSet("CatSet", "unconventional", `{rules: [{id: r2}]}`), `conflict with "a": .spec.rules`)
	})
	t.Run("multi-field keys are one field", func(t *testing.T) {
		mustSSA(t, "a", catSet("CatSet", "multi", `{ports: [{containerPort: 53, protocol: TCP}]}`))
		conflicts(t, "b", catSet("CatSet", "multi", `{ports: [{containerPort: 53, protocol: UDP}]}`),
			`conflict with "a": .spec.ports[containerPort=53].protocol`)
	})
	t.Run("scalar lists stay atomic", func(t *testing.T) {
		mustSSA(t, "a", catSet("CatSet", "scalars", `{args: [--verbose]}`))
		conflicts(t, "b", catSet("CatSet", "scalars", `{args: [--quiet]}`), `conflict with "a": .spec.args`)
	})
	t.Run("an item without the key makes the list atomic", func(t *testing.T) {
		mustSSA(t, "a", catSet("CatSet", "keyless", `{env: [{name: A, value: "1"}]}`))
		mustSSA(t, "b", catSet("CatSet", "keyless", `{env: [{name: B, value: "2"}]}`))
		conflicts(t, "c", catSet("CatSet", "keyless", `{env: [{value: "3"}]}`), `conflicts with "a":`)
	})
}

package objectstest

// ScenarioCRDs are custom resource definitions for field-management scenarios: Marked has every
// merge marker (list, map and struct types) and a status subresource, Plain no markers, Loose
// a schema that preserves unknown fields, Versioned two versions. The differential tests create
// them on lapis and on the reference server; internal/apply's fixtures use them too.
var ScenarioCRDs = []string{`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: marked.diff.example.com}
spec:
  group: diff.example.com
  names: {kind: Marked, plural: marked, singular: marked}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer}}}
              tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
              args: {type: array, x-kubernetes-list-type: atomic, items: {type: string}}
              settings: {type: object, x-kubernetes-map-type: granular, additionalProperties: {type: string}}
              selector: {type: object, x-kubernetes-map-type: atomic, additionalProperties: {type: string}}
              endpoint:
                type: object
                x-kubernetes-map-type: atomic
                properties: {host: {type: string}, port: {type: integer}}
          status:
            type: object
            properties:
              ready: {type: boolean}
              replicas: {type: integer}
`, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: plains.diff.example.com}
spec:
  group: diff.example.com
  names: {kind: Plain, plural: plains, singular: plain}
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
              items: {type: array, items: {type: object, properties: {name: {type: string}, value: {type: string}}}}
              data: {type: object, additionalProperties: {type: string}}
`, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: loose.diff.example.com}
spec:
  group: diff.example.com
  names: {kind: Loose, plural: loose, singular: loose}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: versioned.diff.example.com}
spec:
  group: diff.example.com
  names: {kind: Versioned, plural: versioned, singular: versioned}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {a: {type: string}, b: {type: string}}}}}}
  - name: v2
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {a: {type: string}, b: {type: string}}}}}}
`}

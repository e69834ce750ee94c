package builtin

import (
	"fmt"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lapis-dev/lapis/internal/catalog"
)

var metaDocs = metav1.ObjectMeta{}.SwaggerDoc()

var nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metaDocs["name"]}

func decode(obj *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		return fmt.Errorf("decoding %s: %w", obj.GetKind(), err)
	}
	return nil
}

// crdPrinter is apiextensions-apiserver's CRD table convertor (not the generic Name/Created At
// one): served versions sorted, the storage version marked, and the creation time as RFC 3339.
var crdPrinter = &catalog.Printer{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Scope", Type: "string", Description: "Cluster/Namespaced"},
		{Name: "Versions", Type: "string", Description: "Served versions"},
		{Name: "Created At", Type: "date", Description: metaDocs["creationTimestamp"]},
		{Name: "Group", Type: "string", Priority: 1, Description: "API group"},
		{Name: "Kind", Type: "string", Priority: 1, Description: "CustomResource kind"},
		{Name: "ShortNames", Type: "string", Priority: 1, Description: "Short names"},
		{Name: "Established", Type: "boolean", Priority: 1, Description: "Established status"},
	},
	Cells: func(obj *unstructured.Unstructured) ([]any, error) {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := decode(obj, &crd); err != nil {
			return nil, err
		}
		var versions []string
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			label := v.Name
			if v.Storage {
				label += "(storage)"
			}
			versions = append(versions, label)
		}
		slices.Sort(versions)
		established := slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		})
		return []any{
			crd.Name,
			string(crd.Spec.Scope),
			strings.Join(versions, ","),
			crd.CreationTimestamp.Time.UTC().Format(time.RFC3339),
			crd.Spec.Group,
			crd.Spec.Names.Kind,
			strings.Join(crd.Spec.Names.ShortNames, ","),
			established,
		}, nil
	},
}

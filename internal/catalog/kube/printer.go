package kube

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"
	printerstorage "k8s.io/kubernetes/pkg/printers/storage"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// newPrinter is the type's Table as kube-apiserver makes it: with the type's own table
// convertor (kube's printers, always wide, for most types), on the object converted to the
// internal version. Nil, the default Name and Created At table, when kube has no printer for it.
func newPrinter(b *behavior, tables rest.TableConvertor) *catalog.Printer {
	t := b.t
	if t.defaultTable {
		return nil
	}
	if t.table != nil {
		tables = t.table
	}
	empty, err := scheme().New(b.internal)
	if err != nil {
		return nil
	}
	table, err := tables.ConvertToTable(context.Background(), empty, &metav1.TableOptions{})
	if err != nil || len(table.ColumnDefinitions) == 0 {
		return nil
	}
	return &catalog.Printer{
		Less:    listOrder[t.Resource.GroupResource()],
		Columns: table.ColumnDefinitions,
		Cells: func(u *unstructured.Unstructured) ([]any, error) {
			obj, err := b.toInternal(u)
			if err != nil {
				return nil, err
			}
			table, err := tables.ConvertToTable(context.Background(), obj, &metav1.TableOptions{NoHeaders: true})
			if err != nil {
				return nil, err
			}
			if len(table.Rows) != 1 {
				return nil, fmt.Errorf("kube's printer gave %d rows for one %s", len(table.Rows), t.Kind)
			}
			return table.Rows[0].Cells, nil
		},
		Metadata: func(u *unstructured.Unstructured) (any, error) {
			obj, err := b.toInternal(u)
			if err != nil {
				return nil, err
			}
			m, err := meta.Accessor(obj)
			if err != nil {
				return nil, err
			}
			return meta.AsPartialObjectMetadata(m).ObjectMeta, nil
		},
	}
}

// newTables is kube's Table convertor with the printers of every built-in type, as its REST
// storage uses it (server-side tables are wide).
func newTables() rest.TableConvertor {
	return printerstorage.TableConvertor{TableGenerator: printers.NewTableGenerator().With(printersinternal.AddHandlers)}
}

// listOrder are the types whose list printer orders rows itself: kube's printFlowSchemaList sorts
// FlowSchemas as its apihelpers.FlowSchemaSequence does (matching precedence, then name).
var listOrder = map[schema.GroupResource]func(a, b *unstructured.Unstructured) bool{
	{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"}: func(a, b *unstructured.Unstructured) bool {
		pa, _, _ := unstructured.NestedInt64(a.Object, "spec", "matchingPrecedence")
		pb, _, _ := unstructured.NestedInt64(b.Object, "spec", "matchingPrecedence")
		if pa != pb {
			return pa < pb
		}
		return a.GetName() < b.GetName()
	},
}

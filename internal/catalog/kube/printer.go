package kube

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// newPrinter is the type's Table as kube-apiserver prints it: kube's printers, on the object
// converted to the internal version, with every column (kube's server-side tables are wide).
func newPrinter(t *Type, tables *printers.HumanReadableGenerator) *catalog.Printer {
	b := newBehavior(t)
	empty, err := scheme().New(b.internal)
	if err != nil {
		return nil
	}
	table, err := tables.GenerateTable(empty, printers.GenerateOptions{Wide: true})
	if err != nil || len(table.ColumnDefinitions) == 0 {
		return nil // no printer of kube's: the default table
	}
	return &catalog.Printer{
		Columns: table.ColumnDefinitions,
		Cells: func(u *unstructured.Unstructured) ([]any, error) {
			obj, err := b.toInternal(u, false)
			if err != nil {
				return nil, err
			}
			table, err := tables.GenerateTable(obj, printers.GenerateOptions{Wide: true, NoHeaders: true})
			if err != nil {
				return nil, err
			}
			if len(table.Rows) != 1 {
				return nil, fmt.Errorf("kube's printer gave %d rows for one %s", len(table.Rows), t.Kind)
			}
			return table.Rows[0].Cells, nil
		},
	}
}

// newTables is kube's Table generator with the printers of every built-in type.
func newTables() *printers.HumanReadableGenerator {
	return printers.NewTableGenerator().With(printersinternal.AddHandlers)
}

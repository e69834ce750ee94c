package builtin

import (
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// The Table printers kube-apiserver has for the built-in types: the core and coordination types
// use pkg/printers/internalversion (always generated wide, so priority-1 columns carry cells too),
// CRDs apiextensions-apiserver's own table convertor.

// now is the clock ages are measured against; tests replace it.
var now = time.Now

var metaDocs = metav1.ObjectMeta{}.SwaggerDoc()

var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metaDocs["name"]}
	ageColumn  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metaDocs["creationTimestamp"]}
)

// age renders a timestamp as kube's translateTimestampSince does: "<unknown>" when unset,
// otherwise the human-readable time since it.
func age(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now().Sub(t))
}

// creationAge is the Age cell of an object.
func creationAge(obj *unstructured.Unstructured) string {
	return age(obj.GetCreationTimestamp().Time)
}

// mapLen counts the keys of the map at path, zero when it is absent.
func mapLen(obj *unstructured.Unstructured, path ...string) int {
	m, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	if mm, ok := m.(map[string]any); ok {
		return len(mm)
	}
	return 0
}

// stringAt is the string at path, empty when it is absent or not a string.
func stringAt(obj *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, path...)
	return s
}

func decode(obj *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		return fmt.Errorf("decoding %s: %w", obj.GetKind(), err)
	}
	return nil
}

var namespacePrinter = &catalog.Printer{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Status", Type: "string", Description: "The status of the namespace"},
		ageColumn,
	},
	Cells: func(obj *unstructured.Unstructured) ([]any, error) {
		return []any{obj.GetName(), stringAt(obj, "status", "phase"), creationAge(obj)}, nil
	},
}

var configMapPrinter = &catalog.Printer{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Data", Type: "string", Description: corev1.ConfigMap{}.SwaggerDoc()["data"]},
		ageColumn,
	},
	Cells: func(obj *unstructured.Unstructured) ([]any, error) {
		data := int64(mapLen(obj, "data") + mapLen(obj, "binaryData"))
		return []any{obj.GetName(), data, creationAge(obj)}, nil
	},
}

var secretPrinter = &catalog.Printer{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Type", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["type"]},
		{Name: "Data", Type: "string", Description: corev1.Secret{}.SwaggerDoc()["data"]},
		ageColumn,
	},
	Cells: func(obj *unstructured.Unstructured) ([]any, error) {
		return []any{obj.GetName(), stringAt(obj, "type"), int64(secretDataLen(obj)), creationAge(obj)}, nil
	},
}

// secretDataLen counts the keys of the internal Secret's data: data with any stringData folded
// in (stored secrets never have stringData; this only matters for objects not yet defaulted).
func secretDataLen(obj *unstructured.Unstructured) int {
	n := mapLen(obj, "data")
	data, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "data")
	dataMap, _ := data.(map[string]any)
	sd, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "stringData")
	if sdMap, ok := sd.(map[string]any); ok {
		for k := range sdMap {
			if _, dup := dataMap[k]; !dup {
				n++
			}
		}
	}
	return n
}

var serviceAccountPrinter = &catalog.Printer{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Secrets", Type: "string", Description: corev1.ServiceAccount{}.SwaggerDoc()["secrets"]},
		ageColumn,
	},
	Cells: func(obj *unstructured.Unstructured) ([]any, error) {
		secrets, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "secrets")
		list, _ := secrets.([]any)
		return []any{obj.GetName(), int64(len(list)), creationAge(obj)}, nil
	},
}

var leasePrinter = &catalog.Printer{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
		ageColumn,
	},
	Cells: func(obj *unstructured.Unstructured) ([]any, error) {
		return []any{obj.GetName(), stringAt(obj, "spec", "holderIdentity"), creationAge(obj)}, nil
	},
}

var eventColumns = []metav1.TableColumnDefinition{
	{Name: "Last Seen", Type: "string", Description: corev1.Event{}.SwaggerDoc()["lastTimestamp"]},
	{Name: "Type", Type: "string", Description: corev1.Event{}.SwaggerDoc()["type"]},
	{Name: "Reason", Type: "string", Description: corev1.Event{}.SwaggerDoc()["reason"]},
	{Name: "Object", Type: "string", Description: corev1.Event{}.SwaggerDoc()["involvedObject"]},
	{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
	{Name: "Source", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["source"]},
	{Name: "Message", Type: "string", Description: corev1.Event{}.SwaggerDoc()["message"]},
	{Name: "First Seen", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["firstTimestamp"]},
	{Name: "Count", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["count"]},
	{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: metaDocs["name"]},
}

var coreEventPrinter = &catalog.Printer{
	Columns: eventColumns,
	Cells: func(obj *unstructured.Unstructured) ([]any, error) {
		var ev corev1.Event
		if err := decode(obj, &ev); err != nil {
			return nil, err
		}
		return eventCells(&ev), nil
	},
}

// eventsV1EventPrinter prints events.k8s.io/v1 events with the core printer, as kube does (its
// printer works on the internal type, which is the core Event).
var eventsV1EventPrinter = &catalog.Printer{
	Columns: eventColumns,
	Cells: func(obj *unstructured.Unstructured) ([]any, error) {
		if obj.GetAPIVersion() == coreV1.String() {
			// Already in the storage form.
			return coreEventPrinter.Cells(obj)
		}
		var ev eventsv1.Event
		if err := decode(obj, &ev); err != nil {
			return nil, err
		}
		return eventCells(eventV1ToCore(&ev)), nil
	},
}

// eventCells computes kube's event row: ages fall back from the deprecated timestamps to
// eventTime, a series overrides the last-seen time and count, and singleton new-style events
// count 1.
func eventCells(ev *corev1.Event) []any {
	firstSeen := age(ev.FirstTimestamp.Time)
	if ev.FirstTimestamp.IsZero() {
		firstSeen = age(ev.EventTime.Time)
	}
	lastSeen := age(ev.LastTimestamp.Time)
	if ev.LastTimestamp.IsZero() {
		lastSeen = firstSeen
	}
	count := ev.Count
	if ev.Series != nil {
		lastSeen = age(ev.Series.LastObservedTime.Time)
		count = ev.Series.Count
	} else if count == 0 {
		count = 1
	}

	object := strings.ToLower(ev.InvolvedObject.Kind)
	if ev.InvolvedObject.Name != "" {
		object += "/" + ev.InvolvedObject.Name
	}

	return []any{
		lastSeen,
		ev.Type,
		ev.Reason,
		object,
		ev.InvolvedObject.FieldPath,
		eventSource(ev),
		strings.TrimSpace(ev.Message),
		firstSeen,
		int64(count),
		ev.Name,
	}
}

// eventSource is "component, host", falling back to the reporting controller and instance,
// without the host part when there is none.
func eventSource(ev *corev1.Event) string {
	component := cmpOr(ev.Source.Component, ev.ReportingController)
	instance := cmpOr(ev.Source.Host, ev.ReportingInstance)
	if instance == "" {
		return component
	}
	return component + ", " + instance
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
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

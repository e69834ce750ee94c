package builtin

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// Length limits kube applies to new-style events (those with eventTime set).
const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

func coreEvents() *catalog.Resource {
	return &catalog.Resource{
		GroupVersion:         coreV1,
		Name:                 "events",
		Kind:                 "Event",
		ListKind:             "EventList",
		Singular:             "event",
		Namespaced:           true,
		ShortNames:           []string{"ev"},
		StorageGroupResource: eventsStorage,
		// core/v1 event names only get kube's generic path-segment check, for old clients' sake.
		NameValidation: pathSegmentName,
		Printer:        coreEventPrinter,
		Behavior: catalog.Typed[corev1.Event, *corev1.Event]{
			// Requests through core/v1 get only the legacy rules, on create and update alike.
			Validation: func(ev, _ *corev1.Event) field.ErrorList { return legacyEventErrors(ev) },
			Fields:     coreEventFields,
		},
	}
}

func pathSegmentName(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}

func coreEventFields(ev *corev1.Event) fields.Set {
	source := ev.Source.Component
	if source == "" {
		source = ev.ReportingController
	}
	return fields.Set{
		"involvedObject.kind":            ev.InvolvedObject.Kind,
		"involvedObject.namespace":       ev.InvolvedObject.Namespace,
		"involvedObject.name":            ev.InvolvedObject.Name,
		"involvedObject.uid":             string(ev.InvolvedObject.UID),
		"involvedObject.apiVersion":      ev.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": ev.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       ev.InvolvedObject.FieldPath,
		"reason":                         ev.Reason,
		"reportingComponent":             ev.ReportingController,
		"source":                         source,
		"type":                           ev.Type,
	}
}

// legacyEventErrors are the rules every event passes, whichever API it is written through.
// Paths name core/v1 fields, as kube's do.
func legacyEventErrors(ev *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	if ev.EventTime.Time.IsZero() {
		// Old-style event: its namespace must match the involved object's ("default" is
		// accepted for cluster-scoped objects, for old clients).
		if ev.InvolvedObject.Namespace == "" {
			if ev.Namespace != metav1.NamespaceNone && ev.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if ev.Namespace != ev.InvolvedObject.Namespace {
			errs = append(errs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else {
		if ev.InvolvedObject.Namespace == "" && ev.Namespace != metav1.NamespaceDefault && ev.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		if ev.ReportingController == "" {
			errs = append(errs, field.Required(field.NewPath("reportingController"), ""))
		}
		for _, msg := range validation.IsQualifiedName(ev.ReportingController) {
			errs = append(errs, field.Invalid(field.NewPath("reportingController"), ev.ReportingController, msg))
		}
		errs = append(errs, requiredWithLimit(ev.ReportingInstance, "reportingInstance", reportingInstanceLengthLimit)...)
		errs = append(errs, requiredWithLimit(ev.Action, "action", actionLengthLimit)...)
		errs = append(errs, requiredWithLimit(ev.Reason, "reason", reasonLengthLimit)...)
		if len(ev.Message) > noteLengthLimit {
			errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", noteLengthLimit)))
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(ev.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), ev.Namespace, msg))
	}
	return errs
}

func requiredWithLimit(value, name string, limit int) field.ErrorList {
	var errs field.ErrorList
	if value == "" {
		errs = append(errs, field.Required(field.NewPath(name), ""))
	}
	if len(value) > limit {
		errs = append(errs, field.Invalid(field.NewPath(name), "", fmt.Sprintf("can have at most %v characters", limit)))
	}
	return errs
}

// strictEventCreateErrors are the extra rules for events created through events.k8s.io/v1.
func strictEventCreateErrors(ev *corev1.Event) field.ErrorList {
	errs := eventSeriesErrors(ev)
	if ev.EventTime.Time.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if ev.Type != corev1.EventTypeNormal && ev.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", ev.Type)))
	}
	// The deprecated fields are only for events converted from core/v1.
	if !ev.FirstTimestamp.Time.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("firstTimestamp"), "", "needs to be unset"))
	}
	if !ev.LastTimestamp.Time.IsZero() {
		errs = append(errs, field.Invalid(field.NewPath("lastTimestamp"), "", "needs to be unset"))
	}
	if ev.Count != 0 {
		errs = append(errs, field.Invalid(field.NewPath("count"), "", "needs to be unset"))
	}
	if ev.Source.Component != "" || ev.Source.Host != "" {
		errs = append(errs, field.Invalid(field.NewPath("source"), "", "needs to be unset"))
	}
	return errs
}

// strictEventUpdateErrors are the extra rules for events updated through events.k8s.io/v1:
// only the series may change.
func strictEventUpdateErrors(ev, old *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	if !apiequality.Semantic.DeepEqual(ev.Series, old.Series) {
		errs = append(errs, eventSeriesErrors(ev)...)
	}
	immutable := func(newVal, oldVal any, name string) {
		errs = append(errs, apivalidation.ValidateImmutableField(newVal, oldVal, field.NewPath(name))...)
	}
	immutable(ev.InvolvedObject, old.InvolvedObject, "involvedObject")
	immutable(ev.Reason, old.Reason, "reason")
	immutable(ev.Message, old.Message, "message")
	immutable(ev.Source, old.Source, "source")
	immutable(ev.FirstTimestamp, old.FirstTimestamp, "firstTimestamp")
	immutable(ev.LastTimestamp, old.LastTimestamp, "lastTimestamp")
	immutable(ev.Count, old.Count, "count")
	immutable(ev.Reason, old.Reason, "reason") // kube checks reason twice; kept for identical output
	immutable(ev.Type, old.Type, "type")
	immutable(ev.EventTime, old.EventTime, "eventTime")
	immutable(ev.Action, old.Action, "action")
	immutable(ev.Related, old.Related, "related")
	immutable(ev.ReportingController, old.ReportingController, "reportingController")
	immutable(ev.ReportingInstance, old.ReportingInstance, "reportingInstance")
	return errs
}

func eventSeriesErrors(ev *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	if ev.Series != nil {
		if ev.Series.Count < 2 {
			errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
		}
		if ev.Series.LastObservedTime.Time.IsZero() {
			errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
		}
	}
	return errs
}

package builtin

import (
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lapis-dev/lapis/internal/catalog"
)

// eventsV1Events serves events.k8s.io/v1 events over the core/v1 events storage, as kube does.
func eventsV1Events() *catalog.Resource {
	return &catalog.Resource{
		GroupVersion:         eventsv1.SchemeGroupVersion,
		Name:                 "events",
		Kind:                 "Event",
		ListKind:             "EventList",
		Singular:             "event",
		Namespaced:           true,
		ShortNames:           []string{"ev"},
		StorageGroupResource: eventsStorage,
		StorageVersion:       coreV1,
		// The strict events.k8s.io rules include a DNS subdomain name.
		NameValidation: apivalidation.NameIsDNSSubdomain,
		Printer:        eventsV1EventPrinter,
		Conversion:     &catalog.Conversion{ToStorage: eventToStorage, FromStorage: eventFromStorage},
		Behavior: catalog.Typed[eventsv1.Event, *eventsv1.Event]{
			// Validation runs on the core/v1 form, so paths name core/v1 fields, as in kube.
			Validation: func(ev, old *eventsv1.Event) field.ErrorList {
				core := eventV1ToCore(ev)
				errs := legacyEventErrors(core)
				if old == nil {
					return append(errs, strictEventCreateErrors(core)...)
				}
				return append(errs, strictEventUpdateErrors(core, eventV1ToCore(old))...)
			},
			Fields: eventsV1Fields,
		},
	}
}

// eventsV1Fields is the core/v1 field set under the names kube's events.k8s.io/v1 field label
// conversion accepts.
func eventsV1Fields(ev *eventsv1.Event) fields.Set {
	core := coreEventFields(eventV1ToCore(ev))
	return fields.Set{
		"regarding.kind":            core["involvedObject.kind"],
		"regarding.namespace":       core["involvedObject.namespace"],
		"regarding.name":            core["involvedObject.name"],
		"regarding.uid":             core["involvedObject.uid"],
		"regarding.apiVersion":      core["involvedObject.apiVersion"],
		"regarding.resourceVersion": core["involvedObject.resourceVersion"],
		"regarding.fieldPath":       core["involvedObject.fieldPath"],
		"reason":                    core["reason"],
		"reportingController":       core["reportingComponent"],
		"source":                    core["source"],
		"type":                      core["type"],
	}
}

func eventV1ToCore(in *eventsv1.Event) *corev1.Event {
	out := &corev1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:          in.ObjectMeta,
		InvolvedObject:      in.Regarding,
		Reason:              in.Reason,
		Message:             in.Note,
		Source:              in.DeprecatedSource,
		FirstTimestamp:      in.DeprecatedFirstTimestamp,
		LastTimestamp:       in.DeprecatedLastTimestamp,
		Count:               in.DeprecatedCount,
		Type:                in.Type,
		EventTime:           in.EventTime,
		Action:              in.Action,
		Related:             in.Related,
		ReportingController: in.ReportingController,
		ReportingInstance:   in.ReportingInstance,
	}
	if in.Series != nil {
		out.Series = &corev1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return out
}

func eventCoreToV1(in *corev1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		TypeMeta:                 metav1.TypeMeta{APIVersion: eventsv1.SchemeGroupVersion.String(), Kind: "Event"},
		ObjectMeta:               in.ObjectMeta,
		EventTime:                in.EventTime,
		ReportingController:      in.ReportingController,
		ReportingInstance:        in.ReportingInstance,
		Action:                   in.Action,
		Reason:                   in.Reason,
		Regarding:                in.InvolvedObject,
		Related:                  in.Related,
		Note:                     in.Message,
		Type:                     in.Type,
		DeprecatedSource:         in.Source,
		DeprecatedFirstTimestamp: in.FirstTimestamp,
		DeprecatedLastTimestamp:  in.LastTimestamp,
		DeprecatedCount:          in.Count,
	}
	if in.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: in.Series.Count, LastObservedTime: in.Series.LastObservedTime}
	}
	return out
}

func eventToStorage(u *unstructured.Unstructured) error {
	var ev eventsv1.Event
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ev); err != nil {
		return err
	}
	return setContent(u, eventV1ToCore(&ev))
}

func eventFromStorage(u *unstructured.Unstructured) error {
	var ev corev1.Event
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ev); err != nil {
		return err
	}
	return setContent(u, eventCoreToV1(&ev))
}

func setContent(u *unstructured.Unstructured, obj runtime.Object) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u.Object = content
	return nil
}

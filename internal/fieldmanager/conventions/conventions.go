// Package conventions names lapis's opt-in to convention-based list merging for custom
// resources (the `apply.lapis.dev/list-conventions` CRD annotation) and its one accepted value.
// It is a leaf package so that CRD validation can refuse other values without depending on
// field management.
package conventions

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	// Annotation is the CRD annotation that opts a CRD's custom resources into convention-based
	// list merging under server-side apply.
	Annotation = "apply.lapis.dev/list-conventions"
	// Metacontroller is the only convention: Metacontroller's dynamic apply, where a list whose
	// items are all objects sharing one of MergeKeys is merged as a list map keyed by it.
	Metacontroller = "metacontroller"
)

// MergeKeys returns Metacontroller's conventional merge keys in its order of precedence
// (pkg/dynamic/apply's knownMergeKeys): when the items of a list share several, the first wins.
// It returns a new slice each call, so callers cannot change the convention.
func MergeKeys() []string {
	return []string{"containerPort", "port", "mountPath", "name", "uid", "ip", "path"}
}

// Enabled reports whether annotations (a CRD's) opt into the convention. Any other value is
// refused when the CRD is written (Validate), so it is treated as off here.
func Enabled(annotations map[string]string) bool {
	return annotations[Annotation] == Metacontroller
}

// Validate refuses any value of the annotation but Metacontroller, in kube's words for an
// unsupported value. fldPath is the annotations' path (metadata.annotations).
func Validate(annotations map[string]string, fldPath *field.Path) field.ErrorList {
	v, ok := annotations[Annotation]
	if !ok || v == Metacontroller {
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath.Key(Annotation), v, []string{Metacontroller})}
}

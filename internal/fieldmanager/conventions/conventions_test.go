package conventions

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidate(t *testing.T) {
	path := field.NewPath("metadata", "annotations")
	for _, tc := range []struct {
		annotations map[string]string
		enabled     bool
		err         string
	}{
		{annotations: nil},
		{annotations: map[string]string{"other": "x"}},
		{annotations: map[string]string{Annotation: "metacontroller"}, enabled: true},
		{annotations: map[string]string{Annotation: "Metacontroller"},
			err: `metadata.annotations[apply.lapis.dev/list-conventions]: Unsupported value: "Metacontroller": supported values: "metacontroller"`},
		{annotations: map[string]string{Annotation: ""},
			err: `metadata.annotations[apply.lapis.dev/list-conventions]: Unsupported value: "": supported values: "metacontroller"`},
	} {
		errs := Validate(tc.annotations, path)
		got := ""
		if len(errs) > 0 {
			got = errs.ToAggregate().Error()
		}
		if got != tc.err {
			t.Errorf("%v: got %q, want %q", tc.annotations, got, tc.err)
		}
		if Enabled(tc.annotations) != tc.enabled {
			t.Errorf("%v: Enabled = %v", tc.annotations, !tc.enabled)
		}
	}
}

func TestMergeKeysAreACopy(t *testing.T) {
	k := MergeKeys()
	k[0] = "changed"
	if MergeKeys()[0] != "containerPort" {
		t.Fatal("MergeKeys shares its slice")
	}
}

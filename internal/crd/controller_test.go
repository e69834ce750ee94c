package crd

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/lapis-dev/lapis/internal/catalog"
)

func TestAcceptNames(t *testing.T) {
	existing := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(widgetsCRD), existing); err != nil {
		t.Fatal(err)
	}
	c := &Controller{cat: catalog.New()}
	c.cat.SetCustom(existing.Name, ResourcesFor(existing))

	tests := []struct {
		name            string
		group, plural   string
		kind            string
		accepted        apiextensionsv1.ConditionStatus
		reason, message string
		established     apiextensionsv1.ConditionStatus
	}{
		{"no conflict", "example.com", "gadgets", "Gadget", apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found", apiextensionsv1.ConditionTrue},
		// A plural is unique by the CRD's name (plural.group); the other names are not.
		{"plural used as another's singular", "example.com", "widget", "Other", apiextensionsv1.ConditionFalse, "NameConflict", `"widget" is already in use`, apiextensionsv1.ConditionFalse},
		{"kind taken", "example.com", "others", "Widget", apiextensionsv1.ConditionFalse, "NameConflict", `"Widget" is already in use`, apiextensionsv1.ConditionFalse},
		{"same names, other group", "other.com", "widgets", "Widget", apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found", apiextensionsv1.ConditionTrue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			crd.Name = tt.plural + "." + tt.group
			crd.Spec.Group = tt.group
			crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: tt.plural, Kind: tt.kind}
			crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}}
			status := c.acceptNames(crd)
			var accepted, established *apiextensionsv1.CustomResourceDefinitionCondition
			for i := range status.Conditions {
				switch status.Conditions[i].Type {
				case apiextensionsv1.NamesAccepted:
					accepted = &status.Conditions[i]
				case apiextensionsv1.Established:
					established = &status.Conditions[i]
				}
			}
			if accepted == nil || accepted.Status != tt.accepted || accepted.Reason != tt.reason || accepted.Message != tt.message {
				t.Errorf("NamesAccepted %+v", accepted)
			}
			if established == nil || established.Status != tt.established {
				t.Errorf("Established %+v", established)
			}
			if tt.accepted == apiextensionsv1.ConditionTrue && (status.AcceptedNames.ListKind != tt.kind+"List" || status.AcceptedNames.Singular == "") {
				t.Errorf("accepted names not completed: %+v", status.AcceptedNames)
			}
		})
	}
}

func TestApprovalCondition(t *testing.T) {
	tests := []struct {
		group, annotation string
		status            apiextensionsv1.ConditionStatus
		reason            string
	}{
		{"example.com", "", "", ""},
		{"x.k8s.io", "", apiextensionsv1.ConditionFalse, "MissingAnnotation"},
		{"x.kubernetes.io", "https://github.com/kubernetes/kubernetes/pull/1", apiextensionsv1.ConditionTrue, "ApprovedAnnotation"},
		{"k8s.io", "unapproved, testing", apiextensionsv1.ConditionFalse, "UnapprovedAnnotation"},
		{"k8s.io", "yes", apiextensionsv1.ConditionFalse, "InvalidAnnotation"},
	}
	for _, tt := range tests {
		crd := &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: tt.group}}
		if tt.annotation != "" {
			crd.Annotations = map[string]string{apiextensionsv1.KubeAPIApprovedAnnotation: tt.annotation}
		}
		c := approvalCondition(crd)
		switch {
		case tt.reason == "" && c != nil:
			t.Errorf("%s: condition %v, want none", tt.group, c)
		case tt.reason != "" && (c == nil || c.Type != apiextensionsv1.KubernetesAPIApprovalPolicyConformant || c.Status != tt.status || c.Reason != tt.reason || c.Message == ""):
			t.Errorf("%s %q: condition %v, want %s %s", tt.group, tt.annotation, c, tt.status, tt.reason)
		}
	}
}

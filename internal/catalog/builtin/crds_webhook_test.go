package builtin

import (
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// TestWebhookConversionValidation: CRDs with conversion webhooks are accepted, and refused as
// kube-apiserver 1.37 refuses them (its messages, asked of kube-reference).
func TestWebhookConversionValidation(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       []string // field errors; none: accepted
	}{
		{"url", `"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"https://x.example.com/c"}}}`, nil},
		{"service", `"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1beta1","v1"],"clientConfig":{"service":{"name":"s","namespace":"n"}}}}`, nil},
		{"none", `"conversion":{"strategy":"None"}`, nil},
		{"no webhook", `"conversion":{"strategy":"Webhook"}`, []string{
			"spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
			"spec.conversion.conversionReviewVersions: Required value"}},
		{"no review versions", `"conversion":{"strategy":"Webhook","webhook":{"clientConfig":{"url":"https://x.example.com/c"}}}`, []string{
			"spec.conversion.conversionReviewVersions: Required value"}},
		{"unknown review version", `"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v3"],"clientConfig":{"url":"https://x.example.com/c"}}}`, []string{
			`spec.conversion.conversionReviewVersions: Invalid value: ["v3"]: must include at least one of v1, v1beta1`}},
		{"http", `"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"http://x.example.com/c"}}}`, []string{
			`spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]`}},
		{"empty client config", `"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{}}}`, []string{
			"spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required"}},
		{"port 0", `"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"service":{"name":"s","namespace":"n","port":0}}}}`, []string{
			"spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive"}},
		{"preserveUnknownFields", `"preserveUnknownFields":true,"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"https://x.example.com/c"}}}`, []string{
			`spec.conversion.strategy: Invalid value: "Webhook": must be None if spec.preserveUnknownFields is true`,
			"spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"}},
		{"webhook with None", `"conversion":{"strategy":"None","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"https://x.example.com/c"}}}`, []string{
			"spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
			"spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook"}},
		{"unknown strategy", `"conversion":{"strategy":"Other"}`, []string{
			`spec.conversion.strategy: Unsupported value: "Other": supported values: "None", "Webhook"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			doc := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"things.example.com"},
				"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"things","singular":"thing","kind":"Thing","listKind":"ThingList"},` + tc.spec + `,
				"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]},
				"status":{"storedVersions":["v1"]}}`
			if err := json.Unmarshal([]byte(doc), crd); err != nil {
				t.Fatal(err)
			}
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
			var got []string
			for _, e := range validateCRD(crd, nil) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

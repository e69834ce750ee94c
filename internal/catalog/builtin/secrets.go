package builtin

import (
	"encoding/json"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lapis-dev/lapis/internal/catalog"
)

func secrets() *catalog.Resource {
	return &catalog.Resource{
		GroupVersion:         coreV1,
		Name:                 "secrets",
		Kind:                 "Secret",
		ListKind:             "SecretList",
		Singular:             "secret",
		Namespaced:           true,
		StorageGroupResource: schema.GroupResource{Resource: "secrets"},
		NameValidation:       apivalidation.NameIsDNSSubdomain,
		Printer:              secretPrinter,
		Behavior: catalog.Typed[corev1.Secret, *corev1.Secret]{
			Defaults: defaultSecret,
			Validation: func(s, old *corev1.Secret) field.ErrorList {
				var errs field.ErrorList
				if old != nil {
					errs = append(errs, validateSecretUpdate(s, old)...)
				}
				return append(errs, validateSecret(s)...)
			},
			Fields: func(s *corev1.Secret) fields.Set {
				return fields.Set{"type": string(s.Type)}
			},
		},
	}
}

// defaultSecret folds stringData into data (kube does this while decoding, so stringData is
// never stored or validated) and defaults the type.
func defaultSecret(s *corev1.Secret) {
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = make(map[string][]byte, len(s.StringData))
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
	}
	s.StringData = nil
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
}

func validateSecretUpdate(s, old *corev1.Secret) field.ErrorList {
	errs := apivalidation.ValidateImmutableField(s.Type, old.Type, field.NewPath("type"))
	if old.Immutable != nil && *old.Immutable {
		if s.Immutable == nil || !*s.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
		}
		if !reflect.DeepEqual(s.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
		}
	}
	return errs
}

func validateSecret(s *corev1.Secret) field.ErrorList {
	var errs field.ErrorList
	dataPath := field.NewPath("data")
	size := 0
	for _, key := range sortedKeys(s.Data) {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, msg))
		}
		size += len(s.Data[key])
	}
	if size > maxDataSize {
		errs = append(errs, field.TooLong(dataPath, "", maxDataSize))
	}

	// requireKey reports a missing key; it returns false when the key is absent.
	requireKey := func(key string) bool {
		if _, ok := s.Data[key]; !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
			return false
		}
		return true
	}
	// requireJSON reports a key that is missing or not a JSON object.
	requireJSON := func(key string) {
		if !requireKey(key) {
			return
		}
		if err := json.Unmarshal(s.Data[key], &map[string]any{}); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	}

	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		// Only the account name is required; a controller fills in the uid and token later.
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		requireJSON(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		requireJSON(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		// Either may be empty, but at least one must be present.
		_, hasUser := s.Data[corev1.BasicAuthUsernameKey]
		_, hasPassword := s.Data[corev1.BasicAuthPasswordKey]
		if !hasUser && !hasPassword {
			errs = append(errs,
				field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""),
				field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		requireKey(corev1.TLSCertKey)
		requireKey(corev1.TLSPrivateKeyKey)
	}
	return errs
}

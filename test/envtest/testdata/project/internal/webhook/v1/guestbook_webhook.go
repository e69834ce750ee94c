// Package v1 holds the Guestbook webhooks.
package v1

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	webappv1 "example.com/guestbook/api/v1"
)

// MaxSize is the largest guestbook the validating webhook admits.
const MaxSize = 10

// SetupGuestbookWebhookWithManager registers the webhooks for Guestbook in the manager.
func SetupGuestbookWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &webappv1.Guestbook{}).
		WithDefaulter(&GuestbookCustomDefaulter{}).
		WithValidator(&GuestbookCustomValidator{}).
		Complete()
}

// +kubebuilder:webhook:path=/mutate-webapp-example-com-v1-guestbook,mutating=true,failurePolicy=fail,sideEffects=None,groups=webapp.example.com,resources=guestbooks,verbs=create;update,versions=v1,name=mguestbook-v1.kb.io,admissionReviewVersions=v1

// GuestbookCustomDefaulter sets a default message.
type GuestbookCustomDefaulter struct{}

// Default implements admission.Defaulter.
func (d *GuestbookCustomDefaulter) Default(_ context.Context, gb *webappv1.Guestbook) error {
	if gb.Spec.Message == "" {
		gb.Spec.Message = "Hello from " + gb.Name
	}
	return nil
}

// +kubebuilder:webhook:path=/validate-webapp-example-com-v1-guestbook,mutating=false,failurePolicy=fail,sideEffects=None,groups=webapp.example.com,resources=guestbooks,verbs=create;update,versions=v1,name=vguestbook-v1.kb.io,admissionReviewVersions=v1

// GuestbookCustomValidator refuses guestbooks that are too large.
type GuestbookCustomValidator struct{}

// ValidateCreate implements admission.Validator.
func (v *GuestbookCustomValidator) ValidateCreate(_ context.Context, gb *webappv1.Guestbook) (admission.Warnings, error) {
	return validate(gb)
}

// ValidateUpdate implements admission.Validator.
func (v *GuestbookCustomValidator) ValidateUpdate(_ context.Context, _, gb *webappv1.Guestbook) (admission.Warnings, error) {
	return validate(gb)
}

// ValidateDelete implements admission.Validator.
func (v *GuestbookCustomValidator) ValidateDelete(context.Context, *webappv1.Guestbook) (admission.Warnings, error) {
	return nil, nil
}

func validate(gb *webappv1.Guestbook) (admission.Warnings, error) {
	if gb.Spec.Size > MaxSize {
		return nil, fmt.Errorf("spec.size %d is over %d", gb.Spec.Size, MaxSize)
	}
	if gb.Spec.Size == 0 {
		return admission.Warnings{"a guestbook of size 0 serves nobody"}, nil
	}
	return nil, nil
}

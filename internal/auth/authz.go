package auth

import "context"

// Attributes describe what a request wants to do, for authorization.
type Attributes struct {
	User        User
	Verb        string
	Group       string
	Version     string
	Resource    string
	Subresource string
	Namespace   string
	Name        string
	Path        string // for non-resource requests
}

// Authorizer decides whether a request may proceed; reason explains a denial.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (allowed bool, reason string, err error)
}

// AllowAuthenticated lets every authenticated user do everything.
type AllowAuthenticated struct{}

// Authorize implements Authorizer.
func (AllowAuthenticated) Authorize(context.Context, Attributes) (bool, string, error) {
	return true, "", nil
}

package catalog

// Verb sets as kube-apiserver serves and advertises them. Built-in resources list their verbs
// sorted; custom resources list them in the order the apiextensions discovery controller uses.
var (
	builtinVerbs     = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	crdVerbs         = []string{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}
	subresourceVerbs = []string{"get", "patch", "update"}
)

// Verbs are the verbs the resource itself serves.
func (r *Resource) Verbs() []string {
	switch {
	case r.ResourceVerbs != nil:
		return r.ResourceVerbs
	case r.ServedByAPIExtensions:
		return crdVerbs
	}
	return builtinVerbs
}

// SubresourceVerbs are the verbs a subresource serves ("" is the resource itself); nil when
// the resource has no such subresource.
func (r *Resource) SubresourceVerbs(sub string) []string {
	if sub == "" {
		return r.Verbs()
	}
	if r.Subresources != nil {
		for _, s := range r.Subresources {
			if s.Name == sub {
				return s.Verbs
			}
		}
		return nil
	}
	switch sub {
	case "status":
		if r.HasStatus {
			return subresourceVerbs
		}
	case "scale":
		if r.Scale != nil {
			return subresourceVerbs
		}
	}
	return nil
}

// Serves tells whether the resource serves verb on sub ("" is the resource itself).
func (r *Resource) Serves(sub, verb string) bool {
	for _, v := range r.SubresourceVerbs(sub) {
		if v == verb {
			return true
		}
	}
	return false
}

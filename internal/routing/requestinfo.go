package routing

import (
	"net/http"
	"strings"
)

// RequestInfo is what a resource path and method name.
type RequestInfo struct {
	// IsResource is false for non-resource paths (/healthz, /version, discovery documents).
	IsResource  bool
	Verb        string // get, list, watch, create, update, patch, delete, deletecollection
	APIPrefix   string // "api" or "apis"
	Group       string
	Version     string
	Namespace   string
	Resource    string
	Name        string
	Subresource string
}

// Parse reads a request's path and method the way kube-apiserver's RequestInfoFactory does:
//
//	/api/v1/namespaces/{ns}/{resource}/{name}/{subresource}
//	/apis/{group}/{version}/{resource}/{name}
//	/api/v1/watch/namespaces/{ns}/{resource}   (legacy watch paths)
func Parse(r *http.Request) RequestInfo {
	parts := splitPath(r.URL.Path)
	info := RequestInfo{}
	if len(parts) < 3 {
		return info
	}
	switch parts[0] {
	case "api":
		info.APIPrefix, info.Version, parts = "api", parts[1], parts[2:]
	case "apis":
		if len(parts) < 4 {
			return info
		}
		info.APIPrefix, info.Group, info.Version, parts = "apis", parts[1], parts[2], parts[3:]
	default:
		return info
	}
	info.IsResource = true
	legacyWatch := false
	if parts[0] == "watch" {
		legacyWatch, parts = true, parts[1:]
		if len(parts) == 0 {
			info.IsResource = false
			return info
		}
	}
	// /namespaces/{ns}/{resource}... names a namespaced resource; /namespaces/{ns} alone (or
	// with a namespace subresource such as /status or /finalize) names the namespace itself.
	if parts[0] == "namespaces" && len(parts) >= 3 && !isNamespaceSubresource(parts) {
		info.Namespace, parts = parts[1], parts[2:]
	} else if parts[0] == "namespaces" && len(parts) >= 2 {
		info.Namespace = parts[1]
	}
	info.Resource = parts[0]
	if len(parts) >= 2 {
		info.Name = parts[1]
	}
	if len(parts) >= 3 {
		info.Subresource = parts[2]
	}
	if len(parts) > 3 && info.Subresource != "proxy" {
		info.IsResource = false // deeper paths are served only under proxy (the proxied path)
		return info
	}
	info.Verb = verbFor(r, info.Name, legacyWatch)
	return info
}

func isNamespaceSubresource(parts []string) bool {
	return len(parts) == 3 && (parts[2] == "status" || parts[2] == "finalize")
}

func verbFor(r *http.Request, name string, legacyWatch bool) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		// As kube's RequestInfoFactory: watch=true makes a watch of a list only; a named GET
		// stays a get (the legacy /watch/ paths watch one object).
		switch {
		case legacyWatch, name == "" && isTrue(r.URL.Query().Get("watch")):
			return "watch"
		case name == "":
			return "list"
		default:
			return "get"
		}
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if name == "" {
			return "deletecollection"
		}
		return "delete"
	}
	return "" // kube's RequestInfoFactory names no verb for other methods
}

func isTrue(v string) bool { return v == "1" || strings.EqualFold(v, "true") }

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

package routing

import (
	"mime"
	"strings"
)

// Media types lapis serves objects in.
const (
	JSON = "application/json"
	YAML = "application/yaml"
)

// MediaType is one entry of an Accept header.
type MediaType struct {
	Type   string
	Params map[string]string
}

// ParseAccept splits an Accept header into its media ranges, in the client's order.
func ParseAccept(accept string) []MediaType {
	var out []MediaType
	for _, part := range strings.Split(accept, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		typ, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		out = append(out, MediaType{Type: typ, Params: params})
	}
	return out
}

// NegotiateObject picks the representation for an object or list response: JSON or YAML, as
// plain objects (no `as=` conversion). ok is false when nothing the client accepts is served
// (406).
func NegotiateObject(accept string) (string, bool) {
	if strings.TrimSpace(accept) == "" {
		return JSON, true
	}
	for _, mt := range ParseAccept(accept) {
		if mt.Params["as"] != "" {
			continue // Table and other conversions are not served for this request
		}
		switch mt.Type {
		case JSON, "application/*", "*/*":
			return JSON, true
		case YAML:
			return YAML, true
		}
	}
	return "", false
}

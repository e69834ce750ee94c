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

// Target is what a read returns: a media type, and a conversion of the object(s) when the
// client asked for one (as=Table, as=PartialObjectMetadata[List], group meta.k8s.io).
type Target struct {
	MediaType string
	// As is "", "Table", "PartialObjectMetadata" or "PartialObjectMetadataList".
	As string
	// Version is the meta.k8s.io version of a conversion (v1 or v1beta1).
	Version string
}

// NegotiateRead picks the representation of a get (list false) or list/watch (list true)
// response from an Accept header, in the client's order; ok is false for 406.
func NegotiateRead(accept string, list bool) (Target, bool) {
	if strings.TrimSpace(accept) == "" {
		return Target{MediaType: JSON}, true
	}
	for _, mt := range ParseAccept(accept) {
		media := ""
		switch mt.Type {
		case JSON, "application/*", "*/*":
			media = JSON
		case YAML:
			media = YAML
		default:
			continue
		}
		as := mt.Params["as"]
		if as == "" {
			return Target{MediaType: media}, true
		}
		if mt.Params["g"] != "meta.k8s.io" || (mt.Params["v"] != "v1" && mt.Params["v"] != "v1beta1") {
			continue
		}
		switch {
		case as == "Table",
			as == "PartialObjectMetadata" && !list,
			as == "PartialObjectMetadataList" && list:
			return Target{MediaType: media, As: as, Version: mt.Params["v"]}, true
		}
	}
	return Target{}, false
}

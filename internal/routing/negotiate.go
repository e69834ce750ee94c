package routing

import (
	"mime"
	"strings"
)

// Media types lapis serves objects in. Protobuf is kube's binary encoding, offered only for
// types with a Go (Protobuf) form: built-in resources, Status and PartialObjectMetadata.
const (
	JSON     = "application/json"
	YAML     = "application/yaml"
	Protobuf = "application/vnd.kubernetes.protobuf"
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

// mediaOf is the media type lapis answers an Accept entry with, "" for none. As kube-apiserver,
// a stream parameter may only be stream=watch, on a type with a watch framing (not YAML).
func mediaOf(mt MediaType) string {
	media := ""
	switch mt.Type {
	case JSON, "application/*", "*/*":
		media = JSON
	case YAML:
		media = YAML
	case Protobuf:
		media = Protobuf
	}
	if stream := mt.Params["stream"]; stream != "" && (stream != "watch" || media == YAML) {
		return ""
	}
	return media
}

// NegotiateObject picks the representation for an object or list response: JSON, YAML or, when
// protobuf is true (the resource has a Go type), Protobuf, as plain objects (no `as=`
// conversion). ok is false when nothing the client accepts is served (406).
func NegotiateObject(accept string, protobuf bool) (string, bool) {
	if strings.TrimSpace(accept) == "" {
		return JSON, true
	}
	for _, mt := range ParseAccept(accept) {
		if mt.Params["as"] != "" {
			continue // Table and other conversions are not served for this request
		}
		if media := mediaOf(mt); media != "" && (media != Protobuf || protobuf) {
			return media, true
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
// response from an Accept header, in the client's order; ok is false for 406. protobuf says
// whether the resource's objects have a Protobuf form. As in kube-apiserver, Tables are served in
// JSON and YAML only, and PartialObjectMetadata(List) in Protobuf too, for every resource.
func NegotiateRead(accept string, list, protobuf bool) (Target, bool) {
	if strings.TrimSpace(accept) == "" {
		return Target{MediaType: JSON}, true
	}
	for _, mt := range ParseAccept(accept) {
		media := mediaOf(mt)
		if media == "" {
			continue
		}
		as := mt.Params["as"]
		if as == "" {
			if media == Protobuf && !protobuf {
				continue
			}
			return Target{MediaType: media}, true
		}
		if mt.Params["g"] != "meta.k8s.io" || (mt.Params["v"] != "v1" && mt.Params["v"] != "v1beta1") {
			continue
		}
		switch {
		case as == "Table" && media != Protobuf,
			as == "PartialObjectMetadata" && !list,
			as == "PartialObjectMetadataList" && list:
			return Target{MediaType: media, As: as, Version: mt.Params["v"]}, true
		}
	}
	return Target{}, false
}

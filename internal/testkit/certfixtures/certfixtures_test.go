package certfixtures

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"testing"
)

// The same values on every call, each decodable as what it stands for.
func TestPlaceholders(t *testing.T) {
	a, err := Placeholders("x")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Placeholders("x")
	if a["$CSR"] != b["$CSR"] || a["$CERT"] != b["$CERT"] {
		t.Error("two calls made different material")
	}
	csr, err := base64.StdEncoding.DecodeString(a["$CSR"])
	if block, _ := pem.Decode(csr); err != nil || block == nil || block.Type != "CERTIFICATE REQUEST" {
		t.Errorf("$CSR is not a base64 PEM request: %q", a["$CSR"])
	}
	var cert string
	if err := json.Unmarshal([]byte(a["$CERT"]), &cert); err != nil {
		t.Fatal(err)
	}
	if block, _ := pem.Decode([]byte(cert)); block == nil || block.Type != "CERTIFICATE" {
		t.Errorf("$CERT is not a quoted PEM certificate: %s", a["$CERT"])
	}
}

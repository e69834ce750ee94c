package acceptance

import (
	"encoding/json"
	"testing"
)

func TestErrors(t *testing.T) {
	t.Parallel()
	l := startLapis(t)

	t.Run("missing namespace", func(t *testing.T) {
		cases := []struct {
			stdin string
			args  []string
			want  string
		}{
			{"", []string{"create", "configmap", "x", "-n", "nope"}, `error: failed to create configmap: namespaces "nope" not found`},
			{"apiVersion: v1\nkind: Secret\nmetadata: {name: x, namespace: nope}\n", []string{"create", "-f", "-"},
				`Error from server (NotFound): error when creating "STDIN": namespaces "nope" not found`},
			{"", []string{"get", "namespace", "nope"}, `Error from server (NotFound): namespaces "nope" not found`},
		}
		for _, c := range cases {
			wantEqual(t, "kubectl "+c.args[0]+" "+c.args[1], l.fails(t, c.stdin, c.args...), c.want)
		}
	})

	t.Run("malformed JSON body is a 400", func(t *testing.T) {
		broken := writeFile(t, "broken.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"`)
		wantEqual(t, "kubectl create --raw", l.fails(t, "", "create", "--raw", "/api/v1/namespaces/default/configmaps", "-f", broken),
			`Error from server (BadRequest): the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":"v1","kind":"Con ...)`)
	})

	t.Run("invalid names are a 422", func(t *testing.T) {
		const subdomain = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
		const label = `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
		cases := []struct {
			args []string
			want string
		}{
			{[]string{"create", "configmap", "Bad_Name"}, `error: failed to create configmap: ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": ` + subdomain},
			{[]string{"create", "namespace", "Bad_Name"}, `The Namespace "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": ` + label},
		}
		for _, c := range cases {
			wantEqual(t, "kubectl "+c.args[1], l.fails(t, "", c.args...), c.want)
		}
		code, body := l.do(t, "POST", "/api/v1/namespaces/default/secrets", "application/json",
			`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"Bad_Name"}}`, true)
		st := decodeStatus(t, body)
		if code != 422 || st.Code != 422 || st.Reason != "Invalid" || st.Details.Kind != "Secret" || st.Details.Name != "Bad_Name" ||
			len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "metadata.name" || st.Details.Causes[0].Type != "FieldValueInvalid" {
			t.Errorf("POST secret Bad_Name: %d %s", code, body)
		}
	})

	t.Run("unknown field under strict validation", func(t *testing.T) {
		m := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: strict, namespace: default}\ndata: {a: b}\nbogus: 1\n"
		wantEqual(t, "strict", l.fails(t, m, "create", "-f", "-", "--validate=strict"),
			`Error from server (BadRequest): error when creating "STDIN": ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus"`)
		_, errOut, err := l.kubectlIn(m, "create", "-f", "-", "--validate=warn")
		if err != nil {
			t.Fatalf("--validate=warn: %v %s", err, errOut)
		}
		wantEqual(t, "warn", errOut, `Warning: unknown field "bogus"`)
		wantEqual(t, "stored", l.must(t, "get", "configmap", "strict", "-o", "jsonpath={.data}"), `{"a":"b"}`)
	})

	t.Run("HTTP status codes", func(t *testing.T) {
		cases := []struct {
			name, method, path, body string
			token                    bool
			wantCode                 int
			wantReason, wantMessage  string
		}{
			{"anonymous request", "GET", "/api/v1/namespaces", "", false, 403, "Forbidden",
				`namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope`},
			{"malformed JSON", "POST", "/api/v1/namespaces/default/configmaps", `{"metadata":`, true, 400, "BadRequest",
				`the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({"metadata":)`},
			{"missing namespace", "POST", "/api/v1/namespaces/nope/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`, true, 404, "NotFound",
				`namespaces "nope" not found`},
			{"missing object", "GET", "/api/v1/namespaces/default/configmaps/nothing", "", true, 404, "NotFound",
				`configmaps "nothing" not found`},
		}
		for _, c := range cases {
			code, body := l.do(t, c.method, c.path, "application/json", c.body, c.token)
			st := decodeStatus(t, body)
			if code != c.wantCode || st.Code != c.wantCode || st.Reason != c.wantReason || st.Message != c.wantMessage || st.Kind != "Status" {
				t.Errorf("%s: %s %s: got %d %s\nwant %d reason %s message %q", c.name, c.method, c.path, code, body, c.wantCode, c.wantReason, c.wantMessage)
			}
		}
		if code, body := l.do(t, "GET", "/api/v1/namespaces/default", "", "", true); code != 200 {
			t.Errorf("with the admin token: %d %s", code, body)
		}
	})

	t.Run("health endpoints", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz", "/livez"} {
			wantEqual(t, "kubectl get --raw "+path, l.must(t, "get", "--raw", path), "ok")
			if code, body := l.do(t, "GET", path, "", "", false); code != 200 || body != "ok" {
				t.Errorf("anonymous GET %s: %d %q, want 200 ok", path, code, body)
			}
		}
	})
}

type status struct {
	Kind    string `json:"kind"`
	Code    int    `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Details struct {
		Name   string `json:"name"`
		Kind   string `json:"kind"`
		Causes []struct {
			Type  string `json:"reason"`
			Field string `json:"field"`
		} `json:"causes"`
	} `json:"details"`
}

func decodeStatus(t testing.TB, body string) status {
	t.Helper()
	var st status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Errorf("response is not a Status: %v: %s", err, body)
	}
	return st
}

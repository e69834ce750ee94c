package aggregation

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

// target is one of the two API servers compared, with the clients users have.
type target struct {
	name       string // "lapis" or "kube"
	dir        string // its directory: data, logs, its sample-apiserver's
	kubeconfig string // an admin's
	config     *rest.Config
	client     *kubernetes.Clientset
	aggregator *aggregatorclient.Clientset
	dynamic    dynamic.Interface
	http       *http.Client
}

func newTarget(name, kubeconfig, dir string) (*target, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	t := &target{name: name, dir: dir, kubeconfig: kubeconfig, config: cfg}
	if t.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if t.aggregator, err = aggregatorclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if t.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if t.http, err = rest.HTTPClientFor(cfg); err != nil {
		return nil, err
	}
	return t, nil
}

// answer is an HTTP exchange's outcome as compared: the code, the Content-Type and the body.
type answer struct {
	code        int
	contentType string
	body        []byte
	err         error // no answer, or the body could not be read
}

// answerText is a as compared: code, Content-Type and canonical JSON (or the text) of the
// body.
func answerText(a answer) string {
	s := fmt.Sprintf("%d %s\n%s", a.code, a.contentType, canonicalJSON(a.body))
	if a.err != nil {
		s += "\n" + describeErr(a.err)
	}
	return s
}

// get sends GET path as the admin, accepting accept ("" for JSON).
func (t *target) get(ctx context.Context, path, accept string) answer {
	if accept == "" {
		accept = "application/json"
	}
	return t.do(ctx, t.http, "GET", path, accept, nil)
}

func (t *target) do(ctx context.Context, client *http.Client, method, path, accept string, header http.Header) answer {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, t.config.Host+path, nil)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Accept", accept)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: b, err: err}
}

// kubectl runs kubectl on t as the admin, with a discovery cache of its own (none is reused
// between calls, so that each sees the server as it is), and returns its output (and what it
// wrote to stderr, when it succeeded) or an error with its exit status and stderr.
func (t *target) kubectl(ctx context.Context, args ...string) (string, error) {
	return t.kubectlIn(ctx, "", args...)
}

// kubectlIn is kubectl with stdin.
func (t *target) kubectlIn(ctx context.Context, stdin string, args ...string) (string, error) {
	cache, err := os.MkdirTemp(t.dir, "kubectl-cache-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(cache)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", t.kubeconfig, "--cache-dir", cache}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECTL_COMMAND_HEADERS=false")
	var stderr strings.Builder
	cmd.Stdin, cmd.Stderr = strings.NewReader(stdin), &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	if stderr.Len() > 0 { // e.g. "No resources found in ... namespace."
		return string(out) + "stderr: " + stderr.String(), nil
	}
	return string(out), nil
}

// sampleDir is where t's sample-apiserver named name keeps its etcd, certificates and log.
func (t *target) sampleDir(name string) string { return filepath.Join(t.dir, "sample-apiserver-"+name) }

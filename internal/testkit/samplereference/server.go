package samplereference

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lapis-dev/lapis/internal/testkit/kubereference"
)

// ReadyTimeout bounds Start's wait for /readyz: the e2e spec's pod waits 20 s before its first
// readiness probe; the process is usually ready within 10 s.
const ReadyTimeout = 90 * time.Second

// Options say how Start runs the sample-apiserver.
type Options struct {
	// Dir holds its etcd's data, its certificates and its log (sample-apiserver.log).
	Dir string
	// Kubeconfig is --authentication-kubeconfig, --authorization-kubeconfig and --kubeconfig:
	// the API server under test, as the identity the extension server runs as (see
	// ServiceAccountKubeconfig).
	Kubeconfig string
	// Service and Namespace name the Service the APIService points at; the serving
	// certificate is for ServerName(Service, Namespace).
	Service, Namespace string
	// Port is the loopback port to serve on (0: a free one, chosen by Start).
	Port int
	// Certificate is the serving certificate; when its Cert is nil Start makes one
	// (NewServingCertificate).
	Certificate ServingCertificate
	// Args are more sample-apiserver flags; a flag given twice takes the later value.
	Args []string
}

// Server is a running sample-apiserver and its etcd.
type Server struct {
	// Port is the loopback port it serves HTTPS on (on 127.0.0.1).
	Port int
	// CABundle is the PEM of the CA of its serving certificate: the APIService's caBundle.
	CABundle []byte
	// ServerName is the name its serving certificate is for, <service>.<namespace>.svc.
	ServerName string

	etcd *kubereference.Etcd
	proc *kubereference.Process
}

// Start starts an etcd and the sample-apiserver on it in opts.Dir, and waits until the
// sample-apiserver's /readyz answers 200 (it is ready once its informers on the API server
// under test have synced and it has read the extension-apiserver-authentication ConfigMap).
func Start(ctx context.Context, opts Options) (*Server, error) {
	if why := Built(); why != "" {
		return nil, errors.New(why)
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, err
	}
	s := &Server{ServerName: ServerName(opts.Service, opts.Namespace)}
	certFile, keyFile, err := s.writeCertificate(opts)
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	if s.Port = opts.Port; s.Port == 0 {
		if s.Port, err = kubereference.FreePort("127.0.0.1"); err != nil {
			return nil, err
		}
	}
	if s.etcd, err = kubereference.StartEtcd(ctx, opts.Dir); err != nil {
		return nil, fmt.Errorf("the sample-apiserver's etcd: %w", err)
	}
	flags := append(args(s.etcd.URL, certFile, keyFile, opts.Kubeconfig, s.Port), opts.Args...)
	if s.proc, err = kubereference.StartProcess(Binary(), flags, filepath.Join(opts.Dir, "sample-apiserver.log")); err != nil {
		_ = s.etcd.Stop()
		return nil, err
	}
	if err := s.waitReady(ctx); err != nil {
		_ = s.Stop()
		return nil, err
	}
	return s, nil
}

// writeCertificate writes opts.Certificate, or a new one, to opts.Dir/tls.{crt,key}, and keeps
// its CA as s.CABundle.
func (s *Server) writeCertificate(opts Options) (certFile, keyFile string, err error) {
	cert := opts.Certificate
	if cert.Cert == nil {
		if cert, err = NewServingCertificate(s.ServerName); err != nil {
			return "", "", err
		}
	}
	s.CABundle = cert.CA
	certFile, keyFile = filepath.Join(opts.Dir, "tls.crt"), filepath.Join(opts.Dir, "tls.key")
	return certFile, keyFile, cert.write(certFile, keyFile)
}

// args are the e2e spec's container arguments (etcd, serving certificate, audit log to
// stdout) and what a process needs in place of the pod's: a loopback port instead of 443, and
// the kubeconfig instead of the in-cluster configuration.
func args(etcdURL, certFile, keyFile, kubeconfig string, port int) []string {
	return []string{
		"--etcd-servers=" + etcdURL,
		"--tls-cert-file=" + certFile,
		"--tls-private-key-file=" + keyFile,
		"--audit-log-path=-",
		"--audit-log-maxage=0",
		"--audit-log-maxbackup=0",
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--kubeconfig=" + kubeconfig,
	}
}

// Client is an HTTPS client that trusts the sample-apiserver's serving certificate (verified
// for ServerName, as the aggregator does) and presents certs, if any (the front proxy's).
func (s *Server) Client(certs ...tls.Certificate) *http.Client {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(s.CABundle)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: s.ServerName, Certificates: certs},
	}}
}

// URL is https://127.0.0.1:Port.
func (s *Server) URL() string {
	return "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
}

// waitReady polls /readyz (the e2e spec's readiness probe, which needs no credentials) until it
// answers 200, the process exits, or ReadyTimeout passes.
func (s *Server) waitReady(ctx context.Context) error {
	client := s.Client()
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(ReadyTimeout)
	last := "no answer"
	for {
		resp, err := get(ctx, client, s.URL()+"/readyz?verbose")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		select {
		case <-s.proc.Exited():
			return fmt.Errorf("sample-apiserver exited before it was ready: %v\n%s", s.proc.Err(), s.proc.LogTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sample-apiserver not ready within %v; /readyz: %s\n%s", ReadyTimeout, last, s.proc.LogTail())
		}
	}
}

// Stop stops the sample-apiserver, then its etcd (SIGTERM, then SIGKILL for what has not
// exited after kubereference.StopTimeout); the error says what had to be killed.
func (s *Server) Stop() error {
	var errs []error
	if s.proc != nil {
		errs = append(errs, s.proc.Stop())
	}
	if s.etcd != nil {
		errs = append(errs, s.etcd.Stop())
	}
	return errors.Join(errs...)
}

// Log is the sample-apiserver's output so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.proc.LogPath())
	return string(b)
}

// LogTail is the last 4 KiB of its output.
func (s *Server) LogTail() string { return s.proc.LogTail() }

// get is client.Get bound to ctx.
func get(ctx context.Context, client *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return client.Do(req)
}

package kubereference

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
)

// Timeouts of StartServer and Server.Stop. kube-apiserver takes 10 to 20 s to become ready on
// two busy cores.
const (
	ReadyTimeout = 90 * time.Second
	StopTimeout  = 30 * time.Second
)

// ServerOptions say how StartServer runs kube-apiserver.
type ServerOptions struct {
	// Dir holds the PKI (EnsurePKI), the kubeconfig and the logs; a server started again in
	// the same Dir is the same server to its clients.
	Dir     string
	EtcdURL string // --etcd-servers: an etcd the caller runs and keeps
	// Address is --bind-address (default 127.0.0.1); Port is --secure-port (0: a free port).
	Address string
	Port    int
	// AdvertiseAddress is --advertise-address (default Address). kube's default endpoint
	// reconciler (lease) refuses a loopback address: a test that wants the kubernetes
	// Service's endpoints kept advertises an address it need not reach (e.g. 192.0.2.10, a
	// documentation address); with a loopback one, pass --endpoint-reconciler-type none in
	// Args, as the script does.
	AdvertiseAddress string
	Args             []string // more kube-apiserver flags; a flag given twice takes the later value
	// Controllers, when not "", also runs kube-controller-manager with these --controllers,
	// once kube-apiserver is ready, with the script's flags but for its root CA, which is the
	// PKI's CA (see PKI).
	Controllers string
}

// Server is a kube-apiserver (and its kube-controller-manager) started by StartServer.
type Server struct {
	Kubeconfig string // an admin kubeconfig (the PKI's client certificate)
	Config     *rest.Config
	Address    string
	Port       int
	PKI        PKI

	apiserver, controllerManager *Process
}

// StartServer runs the built kube-apiserver on opts.EtcdURL with the kube-reference script's
// flags (see Script) but for the serving certificate (the PKI's) and the endpoint reconciler
// (kube's default, lease, which keeps the kubernetes Service's endpoints as a deployed
// kube-apiserver does; see AdvertiseAddress), and waits until /readyz answers 200. Unlike
// Start it leaves etcd alone.
func StartServer(ctx context.Context, opts ServerOptions) (*Server, error) {
	if why := Built(); why != "" {
		return nil, errors.New(why)
	}
	pki, err := EnsurePKI(opts.Dir)
	if err != nil {
		return nil, err
	}
	s := &Server{PKI: pki, Address: opts.Address, Port: opts.Port, Kubeconfig: filepath.Join(opts.Dir, "kubeconfig")}
	if s.Address == "" {
		s.Address = "127.0.0.1"
	}
	if s.Port == 0 {
		if s.Port, err = FreePort(s.Address); err != nil {
			return nil, err
		}
	}
	if err := s.writeKubeconfig(); err != nil {
		return nil, err
	}
	advertise := opts.AdvertiseAddress
	if advertise == "" {
		advertise = s.Address
	}
	args := append(apiserverArgs(opts.EtcdURL, s.Address, advertise, s.Port, pki), opts.Args...)
	if s.apiserver, err = StartProcess(filepath.Join(BinDir(), "kube-apiserver"), args, filepath.Join(opts.Dir, "kube-apiserver.log")); err != nil {
		return nil, err
	}
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	if opts.Controllers != "" {
		args := controllerManagerArgs(s.Kubeconfig, pki, opts.Controllers)
		if s.controllerManager, err = StartProcess(filepath.Join(BinDir(), "kube-controller-manager"), args, filepath.Join(opts.Dir, "kube-controller-manager.log")); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return s, nil
}

// apiserverArgs are the script's kube-apiserver flags, with the PKI's serving certificate.
func apiserverArgs(etcdURL, address, advertise string, port int, pki PKI) []string {
	return []string{
		"--etcd-servers", etcdURL, "--secure-port", strconv.Itoa(port),
		"--bind-address", address, "--advertise-address", advertise,
		"--tls-cert-file", pki.ServingCert, "--tls-private-key-file", pki.ServingKey,
		"--client-ca-file", pki.CACert,
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", pki.SAPub, "--service-account-signing-key-file", pki.SAKey,
		"--service-cluster-ip-range", "10.96.0.0/16",
		"--authorization-mode", "RBAC", "--allow-privileged=true",
	}
}

// controllerManagerArgs are the script's kube-controller-manager flags, its root CA the PKI's.
func controllerManagerArgs(kubeconfig string, pki PKI, controllers string) []string {
	return []string{
		"--kubeconfig", kubeconfig, "--leader-elect=false",
		"--service-account-private-key-file", pki.SAKey, "--root-ca-file", pki.CACert,
		"--cluster-signing-cert-file", pki.CACert, "--cluster-signing-key-file", pki.CAKey,
		"--use-service-account-credentials=false", "--bind-address", "127.0.0.1", "--secure-port", "0",
		"--controllers", controllers,
	}
}

func (s *Server) writeKubeconfig() error {
	host := "https://" + net.JoinHostPort(s.Address, strconv.Itoa(s.Port))
	s.Config = &rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{
		CAFile: s.PKI.CACert, CertFile: s.PKI.ClientCert, KeyFile: s.PKI.ClientKey}}
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: kube-reference, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: admin, user: {client-certificate: %q, client-key: %q}}]
contexts: [{name: kube-reference, context: {cluster: kube-reference, user: admin}}]
current-context: kube-reference
`, host, s.PKI.CACert, s.PKI.ClientCert, s.PKI.ClientKey)
	return os.WriteFile(s.Kubeconfig, []byte(kubeconfig), 0o600)
}

// waitReady polls /readyz until it answers 200, kube-apiserver exits, or ReadyTimeout passes.
func (s *Server) waitReady(ctx context.Context) error {
	client, err := rest.HTTPClientFor(s.Config)
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	client.Timeout = 5 * time.Second
	deadline := time.Now().Add(ReadyTimeout)
	for {
		if resp, err := client.Get(s.Config.Host + "/readyz"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.apiserver.Exited():
			return fmt.Errorf("kube-apiserver exited before it was ready: %v\n%s", s.apiserver.Err(), s.apiserver.LogTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready within %v\n%s", ReadyTimeout, s.apiserver.LogTail())
		}
	}
}

// Stop ends kube-controller-manager, then kube-apiserver: SIGTERM, then SIGKILL for what has
// not exited after StopTimeout. It returns an error when one had to be killed.
func (s *Server) Stop() error {
	var errs []error
	for _, p := range []*Process{s.controllerManager, s.apiserver} {
		if p != nil {
			errs = append(errs, p.Stop())
		}
	}
	return errors.Join(errs...)
}

// StopControllers ends kube-controller-manager (SIGTERM, then SIGKILL after StopTimeout),
// leaving kube-apiserver running.
func (s *Server) StopControllers() error {
	if s.controllerManager == nil {
		return nil
	}
	err := s.controllerManager.Stop()
	s.controllerManager = nil
	return err
}

// Log is kube-apiserver's log so far (all its runs in the directory).
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.apiserver.LogPath())
	return string(b)
}

// FreePort is a TCP port free on address now.
func FreePort(address string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(address, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// BinDir is where the built binaries are (see Built): $KUBE_REFERENCE_BIN, else
// ~/.cache/kube-reference/<Version>.
func BinDir() string {
	if bin := os.Getenv("KUBE_REFERENCE_BIN"); bin != "" {
		return bin
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "kube-reference", Version)
}

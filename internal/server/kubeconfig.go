package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/lapis-dev/lapis/internal/pki"
)

// KubeconfigPath is where the admin kubeconfig is written under the data directory.
func KubeconfigPath(dataDir string) string { return filepath.Join(dataDir, "kubeconfig") }

// writeKubeconfig writes an admin kubeconfig for addr, atomically.
func writeKubeconfig(path string, addr net.Addr, creds *pki.Credentials) error {
	host, port, _ := net.SplitHostPort(addr.String())
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["lapis"] = &clientcmdapi.Cluster{
		Server:                   "https://" + net.JoinHostPort(host, port),
		CertificateAuthorityData: creds.CAPEM,
	}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: creds.AdminToken}
	cfg.Contexts["lapis"] = &clientcmdapi.Context{Cluster: "lapis", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "lapis"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return pki.WriteFileAtomic(path, data, 0o600)
}

// removeKubeconfig removes the admin kubeconfig, if there is one.
func removeKubeconfig(dataDir string) error {
	if err := os.Remove(KubeconfigPath(dataDir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the kubeconfig: %w", err)
	}
	return nil
}

// advertised is the address the kubernetes Service's endpoint is derived from: the listener's,
// with --advertise-address's IP when one is given.
func advertised(cfg Config, listening net.Addr) net.Addr {
	ip := net.ParseIP(cfg.AdvertiseAddress)
	tcp, ok := listening.(*net.TCPAddr)
	if ip == nil || !ok {
		return listening
	}
	return &net.TCPAddr{IP: ip, Port: tcp.Port}
}

package server

import "time"

// Config is what `lapis serve` is told on its command line.
type Config struct {
	// DataDir holds embedded etcd data, TLS material, credentials and the admin kubeconfig.
	DataDir string
	// Listen is HOST:PORT; port 0 picks a free port.
	Listen string
	// EtcdServers, when set, selects an external etcd cluster instead of the embedded one.
	EtcdServers []string
	// EtcdCompactionInterval is how much watch and continue history is kept.
	EtcdCompactionInterval time.Duration
	// EmbeddedEtcdClientURL, when set, also exposes the embedded etcd there (for other lapis
	// processes to share it).
	EmbeddedEtcdClientURL string
}

// Defaults as documented for `lapis serve`.
const (
	DefaultDataDir            = "./lapis-data"
	DefaultListen             = "127.0.0.1:6443"
	DefaultCompactionInterval = 5 * time.Minute
)

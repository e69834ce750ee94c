package aggregation

import (
	"context"
	"os"
	"path/filepath"

	"github.com/lapis-dev/lapis/internal/testkit/samplereference"
)

// startSample runs a sample-apiserver behind s in dir, on port with cert, as the default
// ServiceAccount of namespace (the identity the e2e spec's pod has), for a Service sample-api
// of namespace.
func startSample(ctx context.Context, s *target, dir, namespace string, port int, cert samplereference.ServingCertificate) (*samplereference.Server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := samplereference.ServiceAccountKubeconfig(ctx, s.config, namespace, "default", kubeconfig); err != nil {
		return nil, err
	}
	return samplereference.Start(ctx, samplereference.Options{
		Dir: dir, Kubeconfig: kubeconfig, Service: "sample-api", Namespace: namespace, Port: port, Certificate: cert,
	})
}

package samplereference

import (
	"context"
	"fmt"
	"os"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// tokenSeconds is how long the ServiceAccount token lasts: longer than any test.
const tokenSeconds = 2 * 60 * 60

// ServiceAccountKubeconfig writes to path a kubeconfig for the API server admin reaches, with a
// token of ServiceAccount namespace/name (a TokenRequest, as the kubelet gets a pod's): what
// the e2e spec's pod, running as that ServiceAccount, reads from its in-cluster configuration.
// The spec's RBAC objects bind that ServiceAccount.
func ServiceAccountKubeconfig(ctx context.Context, admin *rest.Config, namespace, name, path string) error {
	client, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return err
	}
	seconds := int64(tokenSeconds)
	tr, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	ca := admin.CAData
	if len(ca) == 0 && admin.CAFile != "" {
		if ca, err = os.ReadFile(admin.CAFile); err != nil {
			return err
		}
	}
	cfg := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"server": {Server: admin.Host, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {Token: tr.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{"server": {Cluster: "server", AuthInfo: name, Namespace: namespace}},
		CurrentContext: "server",
	}
	return clientcmd.WriteToFile(cfg, path)
}

package server

import (
	"context"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/controlplane/controller/clusterauthenticationtrust"
)

// startClusterAuthenticationInfo runs kube's cluster-authentication-info controller as every
// kube-apiserver does (its post-start hook of that name): it keeps
// kube-system/extension-apiserver-authentication holding the client CA bundle lapis trusts and
// its request-header configuration, merged with what other servers wrote there, for extension
// API servers to read. The controller is told when the request-header CA file changes: start
// it before fp runs.
func startClusterAuthenticationInfo(ctx context.Context, client kubernetes.Interface, clientCA dynamiccertificates.CAContentProvider, fp *frontProxy) {
	info := clusterauthenticationtrust.ClusterAuthenticationInfo{ClientCA: clientCA}
	if rh := fp.requestHeader; rh != nil {
		info.RequestHeaderCA = rh.CAContentProvider
		info.RequestHeaderAllowedNames = rh.AllowedClientNames
		info.RequestHeaderExtraHeaderPrefixes = rh.ExtraHeaderPrefixes
		info.RequestHeaderGroupHeaders = rh.GroupHeaders
		info.RequestHeaderUsernameHeaders = rh.UsernameHeaders
		info.RequestHeaderUIDHeaders = rh.UIDHeaders
	}
	controller := clusterauthenticationtrust.NewClusterAuthenticationTrustController(info, client)
	if fp.requestHeaderCA != nil {
		fp.requestHeaderCA.AddListener(controller)
	}
	go controller.Run(ctx, 1)
}

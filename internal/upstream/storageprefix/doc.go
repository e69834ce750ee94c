// Package storageprefix says where kube-apiserver keeps a built-in resource's objects in etcd:
// the prefix below /registry/ that kube's storage factory gives a GroupResource, copied from
// k8s.io/kubernetes v1.37.2 pkg/kubeapiserver (SpecialDefaultResourcePrefixes) and
// k8s.io/apiserver v0.37.2 pkg/server/storage (the fallback to the resource's name).
package storageprefix

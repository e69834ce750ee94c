/*
Copyright 2016 The Kubernetes Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package storageprefix

// Origin: k8s.io/kubernetes v1.37.2, pkg/kubeapiserver/default_storage_factory_builder.go
// (SpecialDefaultResourcePrefixes), and the fallback of k8s.io/apiserver v0.37.2
// pkg/server/storage/storage_factory.go (DefaultStorageFactory.ResourcePrefix).
// Copied because importing pkg/kubeapiserver brings kube's generic server storage with it.
// Local changes: the map is unexported (specialDefaultResourcePrefixes) and read through Of,
// which is ResourcePrefix without the storage factory: its caller passes the storage
// GroupResource (where kube picks among cohabiting resources), and kube-apiserver sets no
// prefix overrides.

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// specialDefaultResourcePrefixes are prefixes compiled into Kubernetes.
var specialDefaultResourcePrefixes = map[schema.GroupResource]string{
	{Group: "", Resource: "replicationcontrollers"}:     "controllers",
	{Group: "", Resource: "endpoints"}:                  "services/endpoints",
	{Group: "", Resource: "nodes"}:                      "minions",
	{Group: "", Resource: "services"}:                   "services/specs",
	{Group: "extensions", Resource: "ingresses"}:        "ingress",
	{Group: "networking.k8s.io", Resource: "ingresses"}: "ingress",
}

// Of is the etcd prefix, below /registry/, under which kube-apiserver stores the objects of
// the built-in resource gr (its storage group and resource): the resource's name but for a few
// that keep older names.
func Of(gr schema.GroupResource) string {
	etcdResourcePrefix := specialDefaultResourcePrefixes[gr]
	if len(etcdResourcePrefix) == 0 {
		etcdResourcePrefix = strings.ToLower(gr.Resource)
	}
	return etcdResourcePrefix
}

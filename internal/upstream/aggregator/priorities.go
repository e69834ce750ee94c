/*
Copyright 2017 The Kubernetes Authors.

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

package aggregator

// Origin: k8s.io/kubernetes v1.37.2, pkg/controlplane/apiserver/aggregator.go
// (APIServicePriority, DefaultGenericAPIServicePriorities, makeAPIService) and
// cmd/kube-apiserver/app/aggregator.go (apiVersionPriorities, merge).
// Copied because kube-apiserver keeps its table in its command's package and the generic part
// in a package of its generic server: the group and version priorities of the local
// APIServices, which order discovery.
// Local changes:
//   - the two tables are merged into one function, KubeAPIServerPriorities (kube's
//     apiVersionPriorities, a package variable there);
//   - makeAPIService is exported as MakeAPIService and does not log the versions it skips.

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	v1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// APIServicePriority defines group priority that is used in discovery. This controls
// group position in the kubectl output.
type APIServicePriority struct {
	// Group indicates the order of the group relative to other groups.
	Group int32
	// Version indicates the relative order of the Version inside of its group.
	Version int32
}

// KubeAPIServerPriorities returns kube-apiserver's APIService priorities: the generic APIs'
// and its own.
func KubeAPIServerPriorities() map[schema.GroupVersion]APIServicePriority {
	return merge(DefaultGenericAPIServicePriorities(), map[schema.GroupVersion]APIServicePriority{
		{Group: "", Version: "v1"}: {Group: 18000, Version: 1},
		// to my knowledge, nothing below here collides
		{Group: "apps", Version: "v1"}:                    {Group: 17800, Version: 15},
		{Group: "autoscaling", Version: "v1"}:             {Group: 17500, Version: 15},
		{Group: "autoscaling", Version: "v2"}:             {Group: 17500, Version: 30},
		{Group: "autoscaling", Version: "v2beta1"}:        {Group: 17500, Version: 9},
		{Group: "autoscaling", Version: "v2beta2"}:        {Group: 17500, Version: 1},
		{Group: "batch", Version: "v1"}:                   {Group: 17400, Version: 15},
		{Group: "batch", Version: "v1beta1"}:              {Group: 17400, Version: 9},
		{Group: "batch", Version: "v2alpha1"}:             {Group: 17400, Version: 9},
		{Group: "networking.k8s.io", Version: "v1"}:       {Group: 17200, Version: 15},
		{Group: "networking.k8s.io", Version: "v1beta1"}:  {Group: 17200, Version: 9},
		{Group: "policy", Version: "v1"}:                  {Group: 17100, Version: 15},
		{Group: "policy", Version: "v1beta1"}:             {Group: 17100, Version: 9},
		{Group: "storage.k8s.io", Version: "v1"}:          {Group: 16800, Version: 15},
		{Group: "storage.k8s.io", Version: "v1beta1"}:     {Group: 16800, Version: 9},
		{Group: "storage.k8s.io", Version: "v1alpha1"}:    {Group: 16800, Version: 1},
		{Group: "scheduling.k8s.io", Version: "v1"}:       {Group: 16600, Version: 15},
		{Group: "scheduling.k8s.io", Version: "v1beta1"}:  {Group: 16600, Version: 9},
		{Group: "scheduling.k8s.io", Version: "v1alpha3"}: {Group: 16600, Version: 3},
		{Group: "node.k8s.io", Version: "v1"}:             {Group: 16300, Version: 15},
		{Group: "node.k8s.io", Version: "v1alpha1"}:       {Group: 16300, Version: 1},
		{Group: "node.k8s.io", Version: "v1beta1"}:        {Group: 16300, Version: 9},
		{Group: "resource.k8s.io", Version: "v1"}:         {Group: 16200, Version: 21},
		{Group: "resource.k8s.io", Version: "v1beta2"}:    {Group: 16200, Version: 15},
		{Group: "resource.k8s.io", Version: "v1beta1"}:    {Group: 16200, Version: 9},
		{Group: "resource.k8s.io", Version: "v1alpha3"}:   {Group: 16200, Version: 1},
		{Group: "lifecycle.k8s.io", Version: "v1alpha1"}:  {Group: 15700, Version: 1},
		// Append a new group to the end of the list if unsure.
		// You can use min(existing group)-100 as the initial value for a group.
		// Version can be set to 9 (to have space around) for a new group.
	})
}

func merge(a, b map[schema.GroupVersion]APIServicePriority) map[schema.GroupVersion]APIServicePriority {
	for k, v := range b {
		a[k] = v
	}
	return a
}

// DefaultGenericAPIServicePriorities returns the APIService priorities for generic APIs
func DefaultGenericAPIServicePriorities() map[schema.GroupVersion]APIServicePriority {
	// The proper way to resolve this letting the aggregator know the desired group and version-within-group order of the underlying servers
	// is to refactor the genericapiserver.DelegationTarget to include a list of priorities based on which APIs were installed.
	// This requires the APIGroupInfo struct to evolve and include the concept of priorities and to avoid mistakes, the core storage map there needs to be updated.
	// That ripples out every bit as far as you'd expect, so for 1.7 we'll include the list here instead of being built up during storage.
	return map[schema.GroupVersion]APIServicePriority{
		{Group: "", Version: "v1"}: {Group: 18000, Version: 1},
		// to my knowledge, nothing below here collides
		{Group: "events.k8s.io", Version: "v1"}:                      {Group: 17750, Version: 15},
		{Group: "events.k8s.io", Version: "v1beta1"}:                 {Group: 17750, Version: 5},
		{Group: "authentication.k8s.io", Version: "v1"}:              {Group: 17700, Version: 15},
		{Group: "authentication.k8s.io", Version: "v1beta1"}:         {Group: 17700, Version: 9},
		{Group: "authentication.k8s.io", Version: "v1alpha1"}:        {Group: 17700, Version: 1},
		{Group: "authorization.k8s.io", Version: "v1"}:               {Group: 17600, Version: 15},
		{Group: "certificates.k8s.io", Version: "v1"}:                {Group: 17300, Version: 15},
		{Group: "certificates.k8s.io", Version: "v1beta1"}:           {Group: 17300, Version: 9},
		{Group: "certificates.k8s.io", Version: "v1alpha1"}:          {Group: 17300, Version: 1},
		{Group: "rbac.authorization.k8s.io", Version: "v1"}:          {Group: 17000, Version: 15},
		{Group: "apiextensions.k8s.io", Version: "v1"}:               {Group: 16700, Version: 15},
		{Group: "admissionregistration.k8s.io", Version: "v1"}:       {Group: 16700, Version: 15},
		{Group: "admissionregistration.k8s.io", Version: "v1beta1"}:  {Group: 16700, Version: 12},
		{Group: "admissionregistration.k8s.io", Version: "v1alpha1"}: {Group: 16700, Version: 9},
		{Group: "coordination.k8s.io", Version: "v1"}:                {Group: 16500, Version: 15},
		{Group: "coordination.k8s.io", Version: "v1beta1"}:           {Group: 16500, Version: 13},
		{Group: "coordination.k8s.io", Version: "v1alpha2"}:          {Group: 16500, Version: 12},
		{Group: "discovery.k8s.io", Version: "v1"}:                   {Group: 16200, Version: 15},
		{Group: "discovery.k8s.io", Version: "v1beta1"}:              {Group: 16200, Version: 12},
		{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}:       {Group: 16100, Version: 21},
		{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta3"}:  {Group: 16100, Version: 18},
		{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta2"}:  {Group: 16100, Version: 15},
		{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta1"}:  {Group: 16100, Version: 12},
		{Group: "flowcontrol.apiserver.k8s.io", Version: "v1alpha1"}: {Group: 16100, Version: 9},
		{Group: "internal.apiserver.k8s.io", Version: "v1alpha1"}:    {Group: 16000, Version: 9},
		{Group: "resource.k8s.io", Version: "v1alpha3"}:              {Group: 15900, Version: 9},
		{Group: "storagemigration.k8s.io", Version: "v1"}:            {Group: 15800, Version: 15},
		{Group: "storagemigration.k8s.io", Version: "v1beta1"}:       {Group: 15800, Version: 9},
		// Append a new group to the end of the list if unsure.
		// You can use min(existing group)-100 as the initial value for a group.
		// Version can be set to 9 (to have space around) for a new group.
	}
}

// MakeAPIService is the local APIService of gv, or nil when gv has no priority.
func MakeAPIService(gv schema.GroupVersion, apiVersionPriorities map[schema.GroupVersion]APIServicePriority) *v1.APIService {
	apiServicePriority, ok := apiVersionPriorities[gv]
	if !ok {
		// if we aren't found, then we shouldn't register ourselves because it could result in a CRD group version
		// being permanently stuck in the APIServices list.
		return nil
	}
	return &v1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group},
		Spec: v1.APIServiceSpec{
			Group:                gv.Group,
			Version:              gv.Version,
			GroupPriorityMinimum: apiServicePriority.Group,
			VersionPriority:      apiServicePriority.Version,
		},
	}
}

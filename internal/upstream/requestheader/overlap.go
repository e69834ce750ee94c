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

package requestheader

// Origin: k8s.io/kubernetes v1.37.2, pkg/kubeapiserver/options/authentication.go
// (the request-header part of BuiltInAuthenticationOptions.Validate, and certificatesOverlap).
// Copied because pkg/kubeapiserver/options imports kube's generic server.
// Local changes: the request-header part of Validate is the function ValidateWithClientCA,
// given the --client-ca-file path (kube's o.ClientCert.ClientCA) and returning its errors.

import (
	"crypto/x509"
	"fmt"

	certutil "k8s.io/client-go/util/cert"
)

// ValidateWithClientCA is Validate, and the refusal of a request-header CA that shares a
// certificate with --client-ca-file unless --requestheader-allowed-names is given.
func ValidateWithClientCA(o *Options, clientCA string) []error {
	allErrors := []error{}
	if o != nil {
		allErrors = append(allErrors, o.Validate()...)

		if len(clientCA) > 0 &&
			len(o.ClientCAFile) > 0 &&
			len(o.AllowedNames) == 0 {
			clientCACerts, err1 := certutil.CertsFromFile(clientCA)
			requestHeaderCACerts, err2 := certutil.CertsFromFile(o.ClientCAFile)
			if err1 == nil && err2 == nil {
				if certificatesOverlap(clientCACerts, requestHeaderCACerts) {
					allErrors = append(allErrors,
						fmt.Errorf("--requestheader-client-ca-file and --client-ca-file contain overlapping certificates; --requestheader-allowed-names must be specified to ensure regular client certificates cannot set authenticating proxy headers for arbitrary users"))
				}
			}
		}

	}

	return allErrors
}

// certificatesOverlap returns true when there's at least one identical
// certificate in the two certificate bundles
func certificatesOverlap(a, b []*x509.Certificate) bool {
	for _, ca := range a {
		for _, cb := range b {
			if ca.Equal(cb) {
				return true
			}
		}
	}
	return false
}

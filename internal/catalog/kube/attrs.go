package kube

import (
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/apis/certificates"
)

// The field-selector attributes kube keeps unexported in these types' storage packages (the
// exported ones come from the strategy packages in the table).

func podCertificateRequestAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	req, ok := obj.(*certificates.PodCertificateRequest)
	if !ok {
		return nil, nil, fmt.Errorf("not a podcertificaterequest")
	}
	return labels.Set(req.Labels), fields.Set{
		"metadata.name": req.Name, "metadata.namespace": req.Namespace,
		"spec.signerName": req.Spec.SignerName, "spec.podName": req.Spec.PodName, "spec.nodeName": string(req.Spec.NodeName),
	}, nil
}

func clusterTrustBundleAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	bundle, ok := obj.(*certificates.ClusterTrustBundle)
	if !ok {
		return nil, nil, fmt.Errorf("not a clustertrustbundle")
	}
	return labels.Set(bundle.Labels), fields.Set{"metadata.name": bundle.Name, "spec.signerName": bundle.Spec.SignerName}, nil
}

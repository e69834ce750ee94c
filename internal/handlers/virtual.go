package handlers

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// virtual answers the resources kube-apiserver computes rather than stores (reviews, bindings,
// component statuses).
func (h *Handler) virtual(rq *request) error {
	return apierrors.NewMethodNotSupported(qualified(rq.resource), rq.info.Verb)
}

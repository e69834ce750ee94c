// Package tables turns objects into the metav1.Table kubectl asks for (Accept:
// application/json;as=Table;g=meta.k8s.io;v=v1): a resource's printer columns, or kube's
// default Name/Created At, with each row carrying the object, its metadata or nothing, as the
// request's includeObject says. It also builds the printers of custom resources from their
// CRD's additionalPrinterColumns.
package tables

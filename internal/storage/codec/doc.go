// Package codec defines the form objects take in storage: JSON that starts with apiVersion,
// kind and metadata, in that order, and carries no resourceVersion (the etcd revision is the
// resourceVersion). That fixed layout lets reads put the resourceVersion in by splicing bytes,
// so serving a stored object, or a list of thousands, needs no decoding.
package codec

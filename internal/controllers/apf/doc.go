// Package apf keeps FlowSchemas' Dangling condition as kube-apiserver's API Priority and
// Fairness config consumer does: whether the PriorityLevelConfiguration a FlowSchema names
// exists. lapis does not queue requests by priority; it keeps the objects' status as kube's.
package apf

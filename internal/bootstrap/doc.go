// Package bootstrap creates, at start-up, the objects kube-apiserver's post-start hooks create:
// the system namespaces, the system PriorityClasses and the API Priority and Fairness
// configuration (mandatory and suggested FlowSchemas and PriorityLevelConfigurations).
package bootstrap

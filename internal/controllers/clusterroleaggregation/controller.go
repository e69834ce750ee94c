package clusterroleaggregation

import (
	"context"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/controller/clusterroleaggregation"
)

// workers is what kube-controller-manager runs the controller with.
const workers = 5

// Run aggregates ClusterRoles until ctx ends. client writes as the controller (a system:masters
// loopback client); factory's ClusterRole informer is registered and started here (kube's
// logger comes from ctx: klog.NewContext).
func Run(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory) {
	c := clusterroleaggregation.NewClusterRoleAggregation(factory.Rbac().V1().ClusterRoles(), client.RbacV1())
	factory.Start(ctx.Done())
	c.Run(ctx, workers)
}

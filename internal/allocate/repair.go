package allocate

import (
	"context"
	"fmt"
	"net"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	apiservice "k8s.io/kubernetes/pkg/api/service"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/registry/core/service/ipallocator"
	netutils "k8s.io/utils/net"

	"github.com/lapis-dev/lapis/internal/catalog"
	"github.com/lapis-dev/lapis/internal/objects"
)

// repair takes the stored Services into account at start-up, as kube's repair controllers do
// on their first pass: each cluster IP a Service holds without an IPAddress gets one
// (RepairIPAddress's "ClusterIPNotAllocated"), and each node port a Service holds is marked
// taken in the stored bitmap (the node port Repair), which is rebuilt from the Services alone
// when the configured range changed. Leaks (an IPAddress or port no Service holds, left by a
// crash between allocation and write) are not reclaimed here.
func repair(ctx context.Context, svc *objects.Service, services *catalog.Resource, ips ipAddresses, nodePorts *rangeStore, cfg Config) error {
	items, _, err := svc.List(ctx, services, "", objects.ListOptions{})
	if err != nil {
		return err
	}
	var held []int
	for _, item := range items {
		s, err := toInternal(item)
		if err != nil {
			continue
		}
		for _, ip := range s.Spec.ClusterIPs {
			if err := repairIP(ips, s, ip, cfg); err != nil {
				return err
			}
		}
		for _, p := range s.Spec.Ports {
			if p.NodePort != 0 {
				held = append(held, int(p.NodePort))
			}
		}
		if apiservice.NeedsHealthCheck(s) && s.Spec.HealthCheckNodePort > 0 {
			held = append(held, int(s.Spec.HealthCheckNodePort))
		}
	}
	// The bitmap is written only when a port was missing from it: a write while lapis starts
	// makes the loopback informers' consistent lists wait for every watch cache to hear of it.
	return nodePorts.update(func() error {
		changed := false
		for _, port := range held {
			if cfg.NodePortRange.Contains(port) {
				// Already taken (by this Service, or by another: kube reports it and goes on).
				if ok, _ := nodePorts.mem.Allocate(port - cfg.NodePortRange.Base); ok {
					changed = true
				}
			}
		}
		if !changed {
			return errUnchanged
		}
		return nil
	})
}

// repairIP creates the IPAddress of a Service's cluster IP when it is missing.
func repairIP(ips ipAddresses, s *api.Service, ip string, cfg Config) error {
	addr := netutils.ParseIPSloppy(ip)
	if addr == nil || !inRanges(addr, cfg) {
		return nil // None, or outside lapis's ranges (kube reports it and goes on)
	}
	_, err := ips.Get(ips.ctx, addr.String(), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return nil
	}
	family := api.IPv4Protocol
	if netutils.IsIPv6(addr) {
		family = api.IPv6Protocol
	}
	klog.InfoS("cluster IP not allocated, repairing", "service", s.Namespace+"/"+s.Name, "clusterIP", ip)
	_, err = ips.Create(ips.ctx, &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: addr.String(), Labels: map[string]string{
			networkingv1.LabelIPAddressFamily: string(family),
			networkingv1.LabelManagedBy:       ipallocator.ControllerName,
		}},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{
			Group: "", Resource: "services", Namespace: s.Namespace, Name: s.Name,
		}},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("IPAddress %s of Service %s/%s: %w", ip, s.Namespace, s.Name, err)
	}
	return nil
}

func inRanges(ip net.IP, cfg Config) bool {
	for _, c := range cfg.ClusterIPRanges {
		if c.Contains(ip) {
			return true
		}
	}
	return false
}

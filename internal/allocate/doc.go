// Package allocate is what kube-apiserver does for Services outside their registry strategy:
// cluster IPs and node ports allocated on create and update, freed on delete (by kube's code,
// copied in internal/upstream/servicealloc because it is unexported in kube), the
// default ServiceCIDR `kubernetes`, and the `kubernetes` Service of the `default` namespace with
// its Endpoints and EndpointSlice pointing at lapis.
//
// Cluster IPs are kube 1.37's: IPAddress objects named by the IP, with a parentRef to their
// Service, allocated by kube's ipallocator.MetaAllocator under the ServiceCIDRs. Its client
// and informers are in-process here: IPAddresses are written, and IPAddresses and ServiceCIDRs
// followed, through the objects pipeline (so they are validated, stored and watched like any
// object). Node ports are kube's portallocator over a bitmap that, as in kube, lives in etcd: a
// v1 RangeAllocation at ranges/servicenodeports below the etcd prefix, read and written back with a
// compare-and-swap on every change, so neither a restart nor another lapis sharing the etcd
// hands a port out twice. At start-up the stored Services are taken into account (kube's repair
// controllers): an IP a Service holds without its IPAddress gets one, a port a Service holds is
// marked taken, and a changed --service-node-port-range rebuilds the bitmap from the Services.
package allocate

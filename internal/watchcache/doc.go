// Package watchcache keeps, per resource, the current objects and a window of recent changes in
// memory, fed by one etcd watch. Watches and lists that may be served from memory are: lists
// ("Any", "Not older than", and "Most Recent" once the cache has caught up with etcd), and every
// watch. Each change is handed to every watcher as the same *Event, so it is encoded once however
// many watchers receive it; a watcher that falls too far behind is closed, not buffered without
// bound (clients re-watch from their last resourceVersion).
package watchcache

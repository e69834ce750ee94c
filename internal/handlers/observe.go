package handlers

import (
	"io"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// WatchObserver is told of the watches the handler serves and of each event it sends (for
// /metrics): WatchStarted when a watch is registered, its done when the watch ends.
type WatchObserver interface {
	WatchStarted(gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) (done func())
	WatchEventSent(gvr schema.GroupVersionResource, size int)
}

// WithWatchObserver makes the handler tell o of its watches.
func (h *Handler) WithWatchObserver(o WatchObserver) *Handler {
	h.watches = o
	return h
}

// noWatchObserver is the observer of a handler that was given none.
type noWatchObserver struct{}

func (noWatchObserver) WatchStarted(schema.GroupVersionResource, schema.GroupVersionKind) func() {
	return func() {}
}
func (noWatchObserver) WatchEventSent(schema.GroupVersionResource, int) {}

// countingWriter counts the bytes written through it: an event's size on the wire.
type countingWriter struct {
	io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.Writer.Write(p)
	c.n += n
	return n, err
}

package namespacequeue

import (
	"context"

	"k8s.io/client-go/util/workqueue"
)

// Queue holds the names of the namespaces waiting for a sync.
type Queue struct {
	names workqueue.TypedRateLimitingInterface[string]
}

// New returns an empty queue; name is the queue's name in client-go's workqueue metrics.
func New(name string) *Queue {
	return &Queue{names: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})}
}

// Add queues namespace for a sync.
func (q *Queue) Add(namespace string) { q.names.Add(namespace) }

// Run syncs the queued namespaces one at a time until ctx ends. A sync that fails is retried
// later; failed, unless ctx has ended, hears of the failure first.
func (q *Queue) Run(ctx context.Context, sync func(ctx context.Context, namespace string) error, failed func(namespace string, err error)) {
	go func() {
		<-ctx.Done()
		q.names.ShutDown()
	}()
	for q.next(ctx, sync, failed) {
	}
}

// next syncs one namespace off the queue; it returns false once the queue is shut down.
func (q *Queue) next(ctx context.Context, sync func(context.Context, string) error, failed func(string, error)) bool {
	namespace, quit := q.names.Get()
	if quit {
		return false
	}
	defer q.names.Done(namespace)
	if err := sync(ctx, namespace); err != nil {
		if ctx.Err() == nil {
			failed(namespace, err)
		}
		q.names.AddRateLimited(namespace)
		return true
	}
	q.names.Forget(namespace)
	return true
}

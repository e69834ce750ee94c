package server

import (
	"context"
	"errors"
	"sync"
)

// cleanupStack is what a start has set going, each step with how to undo it. It is undone last
// step first, once: by a start that fails part-way (only what was started is undone) and by
// Shutdown (everything), so the two cannot drift apart.
type cleanupStack struct {
	mu    sync.Mutex
	steps []cleanupStep
}

// cleanupStep is one thing started, named for the reader and for tests.
type cleanupStep struct {
	name string
	undo func(context.Context) error
}

// push records undo, to run before everything pushed earlier.
func (c *cleanupStack) push(name string, undo func(context.Context) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.steps = append(c.steps, cleanupStep{name, undo})
}

// run undoes every step, the last pushed first, and returns their errors. Every step runs
// whatever the others returned: a failed close must not leave the data directory locked.
func (c *cleanupStack) run(ctx context.Context) error {
	var errs []error
	for {
		c.mu.Lock()
		n := len(c.steps)
		if n == 0 {
			c.mu.Unlock()
			return errors.Join(errs...)
		}
		step := c.steps[n-1]
		c.steps = c.steps[:n-1]
		c.mu.Unlock()
		if err := step.undo(ctx); err != nil {
			errs = append(errs, err)
		}
	}
}

// names are the steps' names, the first pushed first.
func (c *cleanupStack) names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, len(c.steps))
	for i, s := range c.steps {
		names[i] = s.name
	}
	return names
}

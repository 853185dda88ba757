package runtime

import (
	"context"
	"sync"
	"time"
)

// completer batches the finish writes of concurrent attempts: whoever
// finishes while a batch is being written waits for the next one, and each
// batch is one transaction (River's batched completion). A lone finish is
// written at once, so a sync caller waits for no one.
type completer struct {
	rt   *Runtime
	reqs chan completion
	done chan struct{}

	mu     sync.RWMutex // held (read) while sending on reqs
	closed bool
}

type completion struct {
	f     finishing
	reply chan error
}

// maxCompletionBatch bounds one completion transaction.
const maxCompletionBatch = 128

func newCompleter(rt *Runtime) *completer {
	c := &completer{rt: rt, reqs: make(chan completion, 4*maxCompletionBatch), done: make(chan struct{})}
	go c.loop()
	return c
}

// finish writes f in the next batch and returns its own outcome.
func (c *completer) finish(f finishing) error {
	reply := make(chan error, 1)
	c.mu.RLock()
	if c.closed {
		// An attempt that outlived Stop: write it alone.
		c.mu.RUnlock()
		return c.rt.store.Finish(context.Background(), f, toMillis(c.rt.now()))
	}
	c.reqs <- completion{f: f, reply: reply}
	c.mu.RUnlock()
	return <-reply
}

func (c *completer) loop() {
	defer close(c.done)
	batch := make([]completion, 0, maxCompletionBatch)
	for first := range c.reqs {
		batch = append(batch[:0], first)
	drain:
		for len(batch) < maxCompletionBatch {
			select {
			case r, ok := <-c.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		if len(batch) == 1 {
			batch[0].reply <- c.rt.store.Finish(context.Background(), batch[0].f, toMillis(c.rt.now()))
			continue
		}
		fs := make([]finishing, len(batch))
		for i, r := range batch {
			fs[i] = r.f
		}
		errs, err := c.rt.store.FinishBatch(context.Background(), fs, toMillis(c.rt.now()))
		for i, r := range batch {
			if err != nil {
				r.reply <- err
			} else {
				r.reply <- errs[i]
			}
		}
	}
}

// close stops the loop once every queued finish is written; a finish after
// close is written on its own.
func (c *completer) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.reqs)
	c.mu.Unlock()
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
	}
}

package maintenance

import (
	"context"
	"sync"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// CompleterBatchDefault bounds one completion transaction (River's batched
// completion; see Completer).
const CompleterBatchDefault = 128

// completeStore is what the completer writes with (*storage.Store).
type completeStore interface {
	Finish(ctx context.Context, f storage.Finishing, now storage.Millis) error
	FinishBatch(ctx context.Context, fs []storage.Finishing, now storage.Millis) ([]error, error)
}

// CompleterConfig is the completer's configuration and dependencies.
type CompleterConfig struct {
	// Now is the database clock's time (the finish's gmt_modified). Default time.Now.
	Now func() time.Time
	// Batch bounds the finishes written in one transaction. Default
	// CompleterBatchDefault (128); the queue holds 4×Batch.
	Batch int
}

// Completer batches the finish writes of concurrent attempts: whoever
// finishes while a batch is being written waits for the next one, and each
// batch is one transaction. A lone finish is written at once, so a sync
// caller waits for no one. A finish before Start or after Stop is written
// on its own.
type Completer struct {
	store completeStore
	now   func() time.Time
	batch int
	life  lifecycle

	mu     sync.RWMutex // held (read) while sending on reqs
	reqs   chan completion
	closed bool // reqs is closed (Stop)
}

type completion struct {
	f     storage.Finishing
	reply chan error
}

// NewCompleter returns a completer writing with store.
func NewCompleter(store completeStore, cfg CompleterConfig) *Completer {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Batch <= 0 {
		cfg.Batch = CompleterBatchDefault
	}
	return &Completer{store: store, now: cfg.Now, batch: cfg.Batch, life: lifecycle{name: "completer"},
		reqs: make(chan completion, 4*cfg.Batch)}
}

// Start starts the batching goroutine. Only Stop ends it, once every queued
// finish is written: the end of ctx does not (an attempt's outcome must
// land); the writes keep ctx's values.
func (c *Completer) Start(ctx context.Context) error {
	_, err := c.life.start(ctx, c.loop)
	return err
}

// Finish writes f in the next batch and returns its own outcome.
func (c *Completer) Finish(f storage.Finishing) error {
	c.mu.RLock()
	if c.closed || !c.life.running() {
		c.mu.RUnlock()
		return c.store.Finish(context.Background(), f, storage.ToMillis(c.now()))
	}
	reply := make(chan error, 1)
	c.reqs <- completion{f: f, reply: reply}
	c.mu.RUnlock()
	return <-reply
}

// Stop writes every queued finish, then ends the batching goroutine; it
// waits until ctx ends. Finishes after Stop are written on their own.
func (c *Completer) Stop(ctx context.Context) error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.reqs)
	}
	c.mu.Unlock()
	_, err := c.life.stop(ctx)
	return err
}

func (c *Completer) loop(ctx context.Context) {
	ctx = context.WithoutCancel(ctx) // Stop cancels it only once the queue is drained
	batch := make([]completion, 0, c.batch)
	for first := range c.reqs {
		batch = append(batch[:0], first)
	drain:
		for len(batch) < c.batch {
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
		c.write(ctx, batch)
	}
}

// write writes one batch and answers each finish with its own outcome (or
// the whole transaction's failure).
func (c *Completer) write(ctx context.Context, batch []completion) {
	now := storage.ToMillis(c.now())
	if len(batch) == 1 {
		batch[0].reply <- c.store.Finish(ctx, batch[0].f, now)
		return
	}
	fs := make([]storage.Finishing, len(batch))
	for i, r := range batch {
		fs[i] = r.f
	}
	errs, err := c.store.FinishBatch(ctx, fs, now)
	for i, r := range batch {
		if err != nil {
			r.reply <- err
		} else {
			r.reply <- errs[i]
		}
	}
}

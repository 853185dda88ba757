package maintenance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrStopped is returned by Start on a service that was stopped: services
// run once.
var ErrStopped = errors.New("argo: maintenance service already stopped")

// lifecycle is the Start/Stop machinery every service shares: a main
// goroutine started once, the goroutines it adds (spawn), and a Stop that
// ends them and waits for them within its context.
type lifecycle struct {
	name string // for Stop's error

	mu     sync.Mutex
	state  lifeState
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type lifeState int

const (
	lifeNew lifeState = iota
	lifeRunning
	lifeStopped
)

// start runs run on its own goroutine with a context that ends at stop or
// when ctx ends. It reports whether this call started it (false: running
// already).
func (l *lifecycle) start(ctx context.Context, run func(ctx context.Context)) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch l.state {
	case lifeRunning:
		return false, nil
	case lifeStopped:
		return false, fmt.Errorf("%w: %s", ErrStopped, l.name)
	}
	runCtx, cancel := context.WithCancel(ctx)
	l.state, l.cancel = lifeRunning, cancel
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		run(runCtx)
	}()
	return true, nil
}

// spawn runs fn on a goroutine that stop waits for, unless the service is
// stopped; it reports whether fn was started.
func (l *lifecycle) spawn(fn func()) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != lifeRunning {
		return false
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		fn()
	}()
	return true
}

// running reports whether the service was started and not stopped.
func (l *lifecycle) running() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state == lifeRunning
}

// stop ends the service's context and waits for its goroutines until ctx
// ends. first reports whether this call stopped a running service (the
// caller hands back what the service held only then).
func (l *lifecycle) stop(ctx context.Context) (first bool, err error) {
	l.mu.Lock()
	was := l.state
	l.state = lifeStopped
	if was == lifeRunning {
		l.cancel()
	}
	l.mu.Unlock()
	if was == lifeNew {
		return false, nil
	}
	done := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return was == lifeRunning, nil
	case <-ctx.Done():
	}
	select { // done and the deadline at once: done wins
	case <-done:
		return was == lifeRunning, nil
	default:
		return was == lifeRunning, fmt.Errorf("argo: %s still running when Stop's context ended: %w", l.name, ctx.Err())
	}
}

// sleep waits d, or until ctx ends or wake fires; it reports whether to go
// on (false: ctx ended).
func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-wake:
	}
	return true
}

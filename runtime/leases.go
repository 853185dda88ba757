package runtime

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// leaseSet is the leases this instance holds, renewed together by renewLoop
// for as long as anyone holds them: a running attempt or fallback (run), a
// started held retry waiting for a worker (runWhenFree), an outcome still
// being written in the background (record). Each key counts its holders.
//
// A function running under a lease registers its cancel func (start), so
// that a renewal that finds the lease gone cancels it at once (lose); its
// outcome is then not written (done reports the loss).
type leaseSet struct {
	mu   sync.Mutex
	held map[leaseKey]*leaseHold
}

type leaseHold struct {
	holders int
	run     *leaseRun // the function running under this lease, if any
}

// leaseRun is one function (attempt or fallback) running under a lease.
type leaseRun struct {
	name   string
	kind   string // "attempt" or "fallback"
	cancel context.CancelCauseFunc
	lost   atomic.Bool
}

func (l *leaseSet) add(k leaseKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = map[leaseKey]*leaseHold{}
	}
	h := l.held[k]
	if h == nil {
		h = &leaseHold{}
		l.held[k] = h
	}
	h.holders++
}

func (l *leaseSet) remove(k leaseKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.held[k]; h != nil {
		if h.holders--; h.holders <= 0 {
			delete(l.held, k)
		}
	}
}

// list returns the leases to renew.
func (l *leaseSet) list() []leaseKey {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]leaseKey, 0, len(l.held))
	for k := range l.held {
		out = append(out, k)
	}
	return out
}

// start registers a function about to run under k, which the caller holds
// (add), and returns the context to run it with: parent, canceled with cause
// ErrLeaseLost if the lease is found gone. End the run with done.
func (l *leaseSet) start(parent context.Context, k leaseKey, name, kind string) (context.Context, *leaseRun) {
	ctx, cancel := context.WithCancelCause(parent)
	r := &leaseRun{name: name, kind: kind, cancel: cancel}
	l.mu.Lock()
	if h := l.held[k]; h != nil {
		h.run = r
	}
	l.mu.Unlock()
	return ctx, r
}

// done ends a run registered by start and reports whether its lease was
// lost while it ran (then its outcome must not be written).
func (l *leaseSet) done(k leaseKey, r *leaseRun) (lost bool) {
	l.mu.Lock()
	if h := l.held[k]; h != nil && h.run == r {
		h.run = nil
	}
	l.mu.Unlock()
	r.cancel(nil)
	return r.lost.Load()
}

// lose cancels the function running under k, whose lease a renewal found
// gone, and returns it (nil if none runs: an outcome being written, or a
// held retry not started yet, meets the loss at its own fenced write).
func (l *leaseSet) lose(k leaseKey) *leaseRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.held[k]
	if h == nil || h.run == nil {
		return nil
	}
	h.run.lost.Store(true)
	h.run.cancel(ErrLeaseLost)
	return h.run
}

// running describes the functions running under a lease, for Stop's error:
// "task 12 (send-mail) attempt 3", sorted by task id.
func (l *leaseSet) running() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]leaseKey, 0, len(l.held))
	for k, h := range l.held {
		if h.run != nil {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b leaseKey) int {
		if a.ID != b.ID {
			return cmp.Compare(a.ID, b.ID)
		}
		return a.Attempt - b.Attempt
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		r := l.held[k].run
		out[i] = fmt.Sprintf("task %d (%s) %s %d", k.ID, r.name, r.kind, k.Attempt)
	}
	return out
}

// describeRunning joins running()'s lines, at most ten of them.
func describeRunning(lines []string) string {
	if len(lines) > 10 {
		return strings.Join(lines[:10], ", ") + fmt.Sprintf(" and %d more", len(lines)-10)
	}
	return strings.Join(lines, ", ")
}

package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// progressUnused is what an attempt that never reports progress does with
// its progress: the attempt's context, the end of the function, the close.
func progressUnused(rt *Runtime, ctx context.Context, task *Task, lease leaseKey) {
	_, b := rt.attemptProgress(ctx, task, lease)
	_ = b.end()
	rt.progress.close(b)
}

// BenchmarkAttemptProgressUnused is the progress plumbing of one attempt
// that never reports: what every attempt pays for progress.
func BenchmarkAttemptProgressUnused(b *testing.B) {
	rt := &Runtime{}
	task := &Task{ID: 1, Name: "bench", ExecuteTimes: 1}
	lease := leaseKey{ID: 1, Attempt: 1}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		progressUnused(rt, ctx, task, lease)
	}
}

// BenchmarkAttemptProgressUnusedParallel is the same on every core at once,
// as 32 workers run their attempts: the runtime-wide progress set is shared.
func BenchmarkAttemptProgressUnusedParallel(b *testing.B) {
	rt := &Runtime{}
	var next atomic.Int64
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		id := next.Add(1)
		task := &Task{ID: id, Name: "bench", ExecuteTimes: 1}
		lease := leaseKey{ID: id, Attempt: 1}
		for pb.Next() {
			progressUnused(rt, ctx, task, lease)
		}
	})
}

// progressRegistered reports whether the set holds a box for k.
// The set's keys carry the row's shard (leaseKey.Shard), which an attempt's
// context does not give: k is matched on its task and attempt.
func progressRegistered(rt *Runtime, k leaseKey) bool {
	rt.progress.mu.Lock()
	defer rt.progress.mu.Unlock()
	for key, box := range rt.progress.m {
		if key.ID == k.ID && key.Attempt == k.Attempt && box != nil {
			return true
		}
	}
	return false
}

// progressSetLen is how many boxes the set holds.
func progressSetLen(rt *Runtime) int {
	rt.progress.mu.Lock()
	defer rt.progress.mu.Unlock()
	return len(rt.progress.m)
}

// The progress plumbing of an attempt that never reports allocates nothing
// beyond the attempt's context value (what withAttempt alone costs) and
// leaves the runtime-wide progress set untouched.
func TestProgressUnusedCostsNothing(t *testing.T) {
	rt := &Runtime{}
	task := &Task{ID: 1, Name: "plain", ExecuteTimes: 1}
	lease := leaseKey{ID: 1, Attempt: 1}
	ctx := context.Background()
	base := testing.AllocsPerRun(200, func() { _ = withAttempt(ctx, task.ID, task.ExecuteTimes, task.Name) })
	got := testing.AllocsPerRun(200, func() { progressUnused(rt, ctx, task, lease) })
	if got > base {
		t.Fatalf("an attempt that never reports allocates %v for its context and progress, want no more than its context alone (%v)", got, base)
	}
	_, b := rt.attemptProgress(ctx, task, lease)
	if rt.progress.m != nil || b.registered.Load() {
		t.Fatalf("an attempt that has not reported is in the progress set (%d boxes)", len(rt.progress.m))
	}
	rt.progress.close(b)
}

// A task that never reports progress is never in the progress set while
// its attempt runs; one that reports is from its first report, a renewal
// carries it, and it leaves the set when its attempt ends. A report from a
// goroutine the function left running, made as or after it returns, is
// refused and leaves nothing in the set. On SQLite and MariaDB.
func TestProgressRegisteredAtFirstReport(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		type probe struct {
			before, after bool // registered before and after the first report
			err           error
		}
		plainSeen := make(chan bool, 1)
		probed := make(chan probe, 1)
		seen := make(chan struct{})
		late := make(chan error, 1)
		var rtp atomic.Pointer[Runtime]
		rtOf := func(context.Context) *Runtime { return rtp.Load() }
		var afterCtx atomic.Value // the context of an attempt that reports only after it returned
		afterward := &TaskDef{Name: "progress.afterward", Policy: fastPolicy(1), Run: func(ctx context.Context, _ []byte) error {
			afterCtx.Store(ctx)
			return nil
		}}
		plain := &TaskDef{Name: "progress.never", Policy: fastPolicy(1), Run: func(ctx context.Context, _ []byte) error {
			id, n, _ := AttemptFrom(ctx)
			plainSeen <- progressRegistered(rtOf(ctx), leaseKey{ID: id, Attempt: n})
			return nil
		}}
		reporting := &TaskDef{Name: "progress.first", Policy: fastPolicy(1), Run: func(ctx context.Context, _ []byte) error {
			id, n, _ := AttemptFrom(ctx)
			k := leaseKey{ID: id, Attempt: n}
			var p probe
			p.before = progressRegistered(rtOf(ctx), k)
			p.err = ReportProgress(ctx, 0.25, "first")
			p.after = progressRegistered(rtOf(ctx), k)
			probed <- p
			select { // a renewal wrote it
			case <-seen:
			case <-ctx.Done():
				return ctx.Err()
			}
			// A goroutine left running reports as the function returns.
			go func() { late <- ReportProgress(ctx, 0.9, "late") }()
			return nil
		}}
		cfg := testConfigT(t, dsn)
		cfg.LeaseDuration = 3 * time.Second // renewals every second
		rt := startRuntime(t, cfg)
		rtp.Store(rt)
		for _, d := range []*TaskDef{plain, reporting, afterward} {
			if err := rt.Register(d); err != nil {
				t.Fatal(err)
			}
		}
		pid, err := rt.Submit(context.Background(), Call{Task: plain, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if receive(t, plainSeen, 20*time.Second, "the plain task's attempt") {
			t.Fatal("a task that never reported is in the progress set")
		}
		waitState(t, rt, pid, StateSucceeded, 20*time.Second)
		id, err := rt.Submit(context.Background(), Call{Task: reporting, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		p := receive(t, probed, 20*time.Second, "the first report")
		if p.err != nil || p.before || !p.after {
			t.Fatalf("registered before the first report: %v, after: %v (report: %v); want false, true", p.before, p.after, p.err)
		}
		waitFor(t, 20*time.Second, "a renewal to write the first report", func() bool {
			row := progressRow(t, rt, id)
			return row.ProgressAttempt == 1 && row.ProgressNote == "first"
		})
		close(seen)
		task := waitState(t, rt, id, StateSucceeded, 20*time.Second)
		if err := receive(t, late, 20*time.Second, "the late report"); err != nil && !errors.Is(err, ErrAttemptEnded) {
			t.Fatalf("a report racing the function's return: %v, want nil or ErrAttemptEnded", err)
		}
		if task.ProgressNote != "first" && task.ProgressNote != "late" {
			t.Fatalf("succeeded row's note %q, want the last report before the function returned", task.ProgressNote)
		}
		waitFor(t, 20*time.Second, "the progress set to be empty once the attempts ended", func() bool { return progressSetLen(rt) == 0 })
		// A first report made once the attempt is over (its lease released
		// here, its box closed) is refused and registers nothing.
		aid, err := rt.Submit(context.Background(), Call{Task: afterward, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, rt, aid, StateSucceeded, 20*time.Second)
		waitFor(t, 20*time.Second, "the attempt's lease to be released here", func() bool {
			for _, k := range rt.leases.list() {
				if k.ID == aid {
					return false
				}
			}
			return true
		})
		if err := ReportProgress(afterCtx.Load().(context.Context), 0.5, "too late"); !errors.Is(err, ErrAttemptEnded) {
			t.Fatalf("a first report after the attempt ended: %v, want ErrAttemptEnded", err)
		}
		if n := progressSetLen(rt); n != 0 {
			t.Fatalf("a report after the attempt ended left %d boxes in the progress set", n)
		}
	})
}

package runtime

import (
	"sync/atomic"
	"time"
)

// watchCommitEnded, when set (tests only), is called with the id a commit
// watcher watched once it has returned.
var watchCommitEnded atomic.Pointer[func(id int64)]

// watchCommit waits, briefly, for a transactionally submitted row to become
// visible (its transaction committed), then claims and runs it. It watches
// for the submit's token, not the id: a rolled-back transaction gives its id
// up, and SQLite hands it to the next INSERT, another call's row, which the
// watcher must leave to the claim (and its order gate, flow control and
// dependencies). After two poll intervals it gives up: the poller will find
// the row if it ever commits.
func (rt *Runtime) watchCommit(id int64, token []byte) {
	rt.loops.Add(1)
	go func() {
		defer rt.loops.Done()
		if f := watchCommitEnded.Load(); f != nil {
			defer (*f)(id)
		}
		deadline := time.Now().Add(2 * rt.cfg.PollInterval)
		wait := time.Millisecond
		for time.Now().Before(deadline) {
			select {
			case <-rt.ctx.Done():
				return
			case <-time.After(wait):
			}
			if wait < 50*time.Millisecond {
				wait *= 2
			}
			got, err := rt.store.SubmitTokenID(rt.ctx, token)
			if err == nil && got == 0 {
				continue // not committed yet (or rolled back)
			}
			if err != nil || got != id {
				return
			}
			if rt.reserve(1) == 0 {
				rt.poke()
				return
			}
			now := rt.now()
			t, err := rt.store.ClaimSubmitted(rt.ctx, id, token, rt.cfg.InstanceID, toMillis(now), toMillis(now.Add(rt.cfg.LeaseDuration)))
			if err != nil || t == nil {
				rt.unreserve(1)
				return
			}
			rt.goAttempt(t, rt.handler(t.Name), false)
			return
		}
	}()
}

package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// watchCommitEnded, when set (tests only), is called with the id a commit
// watcher watched once it has returned.
var watchCommitEnded atomic.Pointer[func(id int64)]

// watchClaimBegins, when set (tests only), is called with the id a commit
// watcher is about to claim.
var watchClaimBegins atomic.Pointer[func(id int64)]

// watchCommit waits, briefly, for a transactionally submitted row to become
// visible (its transaction committed), then claims and runs it. It watches
// for the submit's token, not the id: a rolled-back transaction gives its id
// up, and SQLite hands it to the next INSERT, another call's row, which the
// watcher must leave to the claim (and its order gate, flow control and
// dependencies). After two poll intervals it gives up: the poller will find
// the row if it ever commits. shard is the row's shard_key, due its
// execute_time.
func (rt *Runtime) watchCommit(id int64, shard int, token []byte, due time.Time) {
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
			if f := watchClaimBegins.Load(); f != nil {
				(*f)(id)
			}
			t, err := rt.claimSubmitted(id, shard, token, due)
			if err != nil || t == nil {
				rt.unreserve(1)
				return
			}
			rt.goAttempt(t, rt.handler(t.Name), false)
			return
		}
	}()
}

// claimSubmittedBound bounds the commit watcher's claim, which Stop does
// not cut short (see claimSubmitted).
const claimSubmittedBound = 5 * time.Second

// claimSubmitted claims the row a SubmitTx wrote (Store.ClaimSubmitted) for
// the watcher, which holds a worker reservation. Stop does not cancel the
// claim mid-way: canceled between its UPDATE and its read-back (or with
// the UPDATE's answer lost) it would leave the row leased to this instance
// with nothing to run it, charged a lease_expired attempt that never ran
// once the lease ran out (fault checker, MariaDB seed 141589154925663,
// charged-unrun). A claimed row runs, as the poller's do when Stop comes
// after their claim. A claim whose outcome is still unknown is remembered
// by the Store and given back by the poller before its next claim, or here
// if the runtime is stopping (the poller may have given back its last).
//
// The claim's time is never before due, the row's execute_time as the
// submit wrote it: now() steps back by up to half a clock reading's round
// trip when a new reading is applied, and a claim dated a millisecond
// before the row's due time found the row not due and left it to the
// poller, a poll interval later (one run in ten of
// TestStopDuringCommitWatchClaimLeavesNoOrphan).
func (rt *Runtime) claimSubmitted(id int64, shard int, token []byte, due time.Time) (*Task, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rt.ctx), min(rt.cfg.LeaseDuration, claimSubmittedBound))
	defer cancel()
	now := rt.now()
	if now.Before(due) {
		now = due
	}
	t, err := rt.store.ClaimSubmitted(ctx, id, shard, token, rt.cfg.InstanceID, toMillis(now), toMillis(now.Add(rt.cfg.LeaseDuration)))

	var unknown *storage.ClaimUnknownError
	if errors.As(err, &unknown) && rt.ctx.Err() != nil {
		rt.giveBackClaimsOnStop()
	}
	return t, err
}

package mysqldriver

import (
	"context"
	"database/sql/driver"
	"errors"
	"slices"

	"github.com/argo-retry/argo/internal/storage"
)

// The MySQL claim takes only the rows it claims. It reads candidates with a
// plain consistent read (no lock: the due index is scanned, in due order,
// without locking the rows it passes, in any shard), then takes each with a
// fenced UPDATE by primary key that changes the row only if it is still as
// read and still claimable (same state and execute_times, due, not leased
// or held). Exactly the rows whose UPDATE changed them are returned: a
// candidate another claimer took meanwhile is left to it. This does not
// depend on SKIP LOCKED (which some MySQL-compatible servers accept without
// locking anything).

// claimRounds bounds the candidate reads of one claim: when concurrent
// claimers took some of a full page of candidates, the claim reads again
// for the rest of its limit.
const claimRounds = 3

// Claim reads candidates and takes them (see above), up to claimRounds
// reads, and returns the rows taken as claimed.
func (d *Driver) Claim(ctx context.Context, conn storage.Conn, c storage.ClaimRequest) ([]*storage.Task, error) {
	args := append([]any{c.DueBy, c.Now}, c.ScopeArgs...)
	q := ClaimCandidates(c.Scope)
	var won []*storage.Task
	for round := 0; round < claimRounds && len(won) < c.Limit; round++ {
		want := c.Limit - len(won)
		var cands []*storage.Task
		if err := conn.DB().SelectContext(ctx, &cands, q, append(slices.Clip(args), want)...); err != nil {
			if len(won) > 0 {
				break // keep what this claim took; the next claim meets the error
			}
			return nil, err
		}
		took, err := d.TakeCandidates(ctx, conn, c.Owner, c.Now, c.DueBy, c.LeaseUntil, cands)
		if err != nil {
			// A take whose COMMIT's answer was lost may have taken any of
			// cands: a *storage.ClaimUnknownError names them, returned
			// with the rows taken for certain.
			err = storage.ClaimUnknown(d, err, c.Owner, c.Now, c.LeaseUntil, cands)
			var cu *storage.ClaimUnknownError
			if len(won) > 0 && !errors.As(err, &cu) {
				break
			}
			if len(won) == 0 {
				return nil, err
			}
			claimedAs(won, c)
			return won, err
		}
		won = append(won, took...)
		if len(took) == len(cands) || len(cands) < want {
			break // nothing lost to another claimer, or no more due rows
		}
	}
	claimedAs(won, c)
	return won, nil
}

// claimedAs sets won as the claim's SET wrote them.
func claimedAs(won []*storage.Task, c storage.ClaimRequest) {
	for _, t := range won {
		if t.State == storage.StateExhausted {
			t.State = storage.StateFallingBack
		} else {
			t.ExecuteTimes++
			t.State = storage.StateRunning
		}
		t.LeaseOwner, t.LeaseUntil, t.GmtModified = c.Owner, c.LeaseUntil, c.Now
	}
}

// TakeCandidates takes the candidates whose row is still as read and
// returns them (as read, before the claim). With the one-trip pool it first
// tries them all with one fenced UPDATE (takeAllOnetrip), which is exact
// only when it changes every candidate; otherwise, and on the transaction
// path, each is taken with its own ClaimTake (ExecRowwise), in id order.
func (d *Driver) TakeCandidates(ctx context.Context, conn storage.Conn, owner string, now, dueBy, leaseUntil storage.Millis, cands []*storage.Task) ([]*storage.Task, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	byID, keyed := splitKeyed(storage.SortedByID(cands))
	var tookKeyed []*storage.Task
	if len(keyed) > 0 { // under their keys' locks (order_take.go)
		var err error
		if tookKeyed, err = d.takeKeyed(ctx, conn, owner, now, dueBy, leaseUntil, keyed); err != nil {
			return nil, err
		}
		if len(byID) == 0 {
			return tookKeyed, nil
		}
	}
	if d.onetripDB(ctx) != nil {
		all, err := d.takeAllOnetrip(ctx, owner, now, dueBy, leaseUntil, byID)
		if err != nil && !d.IsRetryableLockError(err) {
			return keptOnError(tookKeyed, err)
		}
		if all {
			return append(tookKeyed, byID...), nil
		}
	}
	took, err := storage.TakeRowwise(ctx, d, conn, owner, now, dueBy, leaseUntil, byID)
	if err != nil {
		return keptOnError(tookKeyed, err)
	}
	return append(tookKeyed, took...), nil
}

// keptOnError returns the keyed candidates already taken (committed: they
// are this claim's to run; the next claim meets the error), or err if none.
func keptOnError(took []*storage.Task, err error) ([]*storage.Task, error) {
	if len(took) > 0 {
		return took, nil
	}
	return nil, err
}

// TakeAllArgs are the arguments of ClaimTakeAll for candidates byID.
func TakeAllArgs(owner string, now, dueBy, leaseUntil storage.Millis, byID []*storage.Task) []any {
	args := []any{owner, leaseUntil, now}
	for _, t := range byID {
		args = append(args, t.ID)
	}
	for _, t := range byID {
		args = append(args, t.ShardKey)
	}
	for _, t := range byID {
		args = append(args, t.ID, t.State, t.ExecuteTimes)
	}
	return append(args, dueBy, now)
}

// TakeAllQuery is the one-trip query that takes n candidates at once:
// ClaimTakeAll at READ COMMITTED in a transaction left open (the caller
// commits only if every candidate was taken).
func TakeAllQuery(n int) string {
	return "SET TRANSACTION ISOLATION LEVEL " + rowwiseIsolation + "; START TRANSACTION; " + ClaimTakeAll(n)
}

// takeAllOnetrip runs, in one READ COMMITTED transaction on the one-trip
// pool, one UPDATE by primary key of every candidate with each row's own
// fence (ClaimTake's, as a tuple list), and commits it only if it changed
// every candidate: then this claim took them all, exactly. If any
// candidate had changed (another claimer took it), the transaction is
// rolled back, all is false, and the caller takes the candidates row by
// row. Two round trips: the UPDATE, then COMMIT or ROLLBACK.
func (d *Driver) takeAllOnetrip(ctx context.Context, owner string, now, dueBy, leaseUntil storage.Millis, byID []*storage.Task) (all bool, err error) {
	conn, err := d.onetrip.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	// A connection left mid-transaction is discarded, which rolls it back.
	discard := func() { _ = conn.Raw(func(any) error { return driver.ErrBadConn }) }
	res, err := conn.ExecContext(ctx, TakeAllQuery(len(byID)), TakeAllArgs(owner, now, dueBy, leaseUntil, byID)...)
	if err != nil {
		discard()
		return false, err
	}
	n, err := res.RowsAffected() // of the last statement: the UPDATE
	if err != nil {
		discard()
		return false, err
	}
	end := "COMMIT"
	if n != int64(len(byID)) {
		end = "ROLLBACK"
	}
	if _, err := conn.ExecContext(ctx, end); err != nil {
		discard()
		return false, err
	}
	return end == "COMMIT", nil
}

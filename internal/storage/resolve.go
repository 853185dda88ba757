package storage

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Writes whose outcome is unknown. A write that fails with a definite
// refusal from the server (an error packet on MySQL, an error from SQLite)
// changed nothing. Any other failure (the connection dropped, a deadline
// passed mid-statement, an error while the answer was on its way) may come
// after the server committed: such a write is resolved, never guessed, by
// running it again in a form whose second run is harmless and tells which
// happened (the fences and the submit token make every argo write
// idempotent), then reading back what the Fence alone cannot say.

// SubmitResolveFloor is the least time given to resolving a submit whose
// outcome is unknown, however close the caller's deadline (a submit with a
// 0 ms deadline still gets a true answer). Longer caller deadlines are used
// in full.
const SubmitResolveFloor = 5 * time.Second

// maxSubmitLockTries bounds the tries of a submit refused by lock conflicts
// (deadlock, lock wait timeout, certification failure), which roll the
// INSERT back and are retried with jittered backoff before the caller sees them.
const maxSubmitLockTries = 10

// NewSubmitToken returns the identity of one submit: 8 bytes of Unix
// milliseconds (big-endian, so new tokens land at the end of the index),
// then 8 random bytes.
func NewSubmitToken() []byte {
	tok := make([]byte, 16)
	binary.BigEndian.PutUint64(tok, uint64(time.Now().UnixMilli()))
	if _, err := crand.Read(tok[8:]); err != nil {
		panic("argo: no randomness for a submit token: " + err.Error()) // crypto/rand never fails on supported systems
	}
	return tok
}

// errTokenNotVisible is a duplicate on the submit token whose row a read
// by the token does not find (seen once under load on MariaDB): the submit's
// own row is being written or was written, so the outcome is not known yet
// and the INSERT is run again (resolveInsert) rather than reported refused.
var errTokenNotVisible = errors.New("argo: the submit token is taken, but its row is not visible yet")

// lockBackoff is the jittered wait before try (2, 3, …) of a write refused
// by a lock conflict: half to all of 2 ms doubling, capped at 200 ms.
func lockBackoff(try int) time.Duration {
	d := min(2*time.Millisecond<<min(try-2, 10), 200*time.Millisecond)
	return d/2 + rand.N(d/2+1)
}

// sleepCtx waits d, or until ctx is done (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// ResolveContext is the context a write whose outcome is unknown is resolved
// under: the caller's values, not its cancellation; it ends when the
// caller's context ends (its deadline, or a cancel), but not before floor
// from now. A caller's context that never ends lets it run until the
// database answers.
func ResolveContext(callerCtx context.Context, floor time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(callerCtx))
	floorEnd := time.Now().Add(floor)
	stop := context.AfterFunc(callerCtx, func() { time.AfterFunc(time.Until(floorEnd), cancel) })
	return ctx, func() { stop(); cancel() }
}

// UnresolvedError is what a resolution returns when the database stayed
// unreachable until its context ended.
type UnresolvedError struct{ Last error }

func (e *UnresolvedError) Error() string { return "still unknown: " + e.Last.Error() }
func (e *UnresolvedError) Unwrap() error { return e.Last }

// SubmitInsert writes a submit's row: a refusal by lock conflicts is retried
// (maxSubmitLockTries, jittered backoff), and a failure that leaves the
// outcome unknown is resolved by running the same INSERT again (a duplicate
// on the token means the first one landed) until the caller's deadline, and
// at least SubmitResolveFloor. It returns nil when the row exists (t.ID
// set; resolved says the answer took a resolution), ErrDuplicate for a used
// UniqueKey, a definite refusal when the row provably does not exist, or an
// *UnresolvedError when the database could not be reached to tell.
//
// Concurrent submits are grouped into one transaction where the engine
// chooses it (group_commit.go); each still gets its own answer.
func (s *Store) SubmitInsert(ctx context.Context, t *Task, token []byte) (resolved bool, err error) {
	if err := s.CheckRowFits(ctx, t, false); err != nil {
		return false, err // nothing sent; never joins a group it would break
	}
	if g := s.group; g != nil {
		return g.submit(&groupCall{ctx: ctx, t: t, token: token, wake: make(chan struct{})})
	}
	return s.submitAlone(ctx, t, token)
}

// submitAlone is SubmitInsert of one row in its own statement.
func (s *Store) submitAlone(ctx context.Context, t *Task, token []byte) (resolved bool, err error) {
	return s.settleSubmit(ctx, t, token, s.InsertToken(ctx, nil, t, token))
}

// settleSubmit goes on from the first run of a submit's INSERT, which
// returned err: lock refusals retried, a lost answer resolved.
func (s *Store) settleSubmit(ctx context.Context, t *Task, token []byte, err error) (resolved bool, _ error) {
	if err == nil || errors.Is(err, ErrDuplicate) {
		return false, err
	}
	rctx, cancel := ResolveContext(ctx, SubmitResolveFloor)
	defer cancel()
	ambiguous := !s.OutcomeKnown(err)
	for try := 2; ; try++ {
		switch {
		case ambiguous:
			return true, s.ResolveInsert(rctx, t, token, err)
		case !s.d.IsSubmitLockError(err) || try > maxSubmitLockTries:
			return false, err // refused: nothing written
		case !sleepCtx(rctx, lockBackoff(try)):
			return false, err
		}
		err = s.InsertToken(rctx, nil, t, token)
		if err == nil || errors.Is(err, ErrDuplicate) {
			return false, err
		}
		ambiguous = !s.OutcomeKnown(err)
	}
}

// ResolveTxInsert settles a SubmitTx whose INSERT's answer was lost. In a
// transaction (tx has Commit) it deletes the row again through tx, so that
// the transaction cannot commit it; if tx is broken, it cannot commit
// anything. Either way the row is not persisted. Through an Execer that is
// no transaction (autocommit), the INSERT is run again, as in Submit.
func (s *Store) ResolveTxInsert(ctx context.Context, tx Execer, t *Task, token []byte, err error) error {
	rctx, cancel := ResolveContext(ctx, SubmitResolveFloor)
	defer cancel()
	if _, isTx := tx.(interface{ Commit() error }); isTx {
		if _, derr := tx.ExecContext(rctx, s.sql.DeleteBySubmitToken, token); derr != nil {
			return NotPersisted(t.Name, fmt.Errorf("%w (the connection failed mid-statement and your transaction can no longer commit: run it again from BEGIN)", err))
		}
		return NotPersisted(t.Name, fmt.Errorf("%w (the INSERT's answer was lost; the row was taken out of your transaction again, which can still commit)", err))
	}
	switch rerr := s.ResolveInsert(rctx, t, token, err); {
	case rerr == nil:
		return nil
	case errors.Is(rerr, ErrDuplicate):
		return rerr
	default:
		var unresolved *UnresolvedError
		if errors.As(rerr, &unresolved) {
			return OutcomeUnknown(t.Name, unresolved.Last)
		}
		return NotPersisted(t.Name, rerr)
	}
}

// maxBrokenReruns bounds how many times a resolution runs a submit's INSERT
// again when each run reaches the server and breaks the connection
// mid-statement: a write that fails that way every time (a row the server
// drops the connection for) is then resolved by reading, not re-run for
// ever.
const maxBrokenReruns = 5

// ResolveInsert runs a submit's INSERT again until it gives an answer or
// ctx ends: nil (written now, or a duplicate on the token: written before;
// t.ID is set either way), ErrDuplicate, a lasting refusal (the first run
// was refused too; for a row too large for the server, RowTooLargeError,
// only once a read by the token finds no row), or *UnresolvedError with
// the last error. Without a deadline on ctx it tries while the database
// cannot be reached; once maxBrokenReruns runs have reached the server and
// broken mid-statement it reads by the token instead: the row (nil), or
// *UnresolvedError.
func (s *Store) ResolveInsert(ctx context.Context, t *Task, token []byte, last error) error {
	broken := 0
	for try := 1; ; try++ {
		if try > 1 && !sleepCtx(ctx, lockBackoff(try)) {
			return &UnresolvedError{Last: last}
		}
		err := s.InsertToken(ctx, nil, t, token)
		if err != nil && !errors.Is(err, ErrDuplicate) && !s.OutcomeKnown(err) && ctx.Err() == nil {
			// Sent and broken: the server may refuse this row for its
			// size (a limit lowered since it was last read) by dropping
			// the connection.
			broken++
			if tl := s.CheckRowFits(ctx, t, true); tl != nil {
				err = tl
			}
		}
		switch {
		case isRowTooLarge(err) || (broken >= maxBrokenReruns && ctx.Err() == nil):
			// The same INSERT cannot succeed: what the earlier runs did
			// is read, not run again.
			id, rerr := s.SubmitTokenID(ctx, token)
			switch {
			case rerr == nil && id != 0:
				t.ID = id
				return nil
			case rerr == nil && isRowTooLarge(err):
				return err // no row, and none can be written
			case rerr == nil:
				return &UnresolvedError{Last: err}
			}
			if ctx.Err() != nil {
				return &UnresolvedError{Last: lastCause(rerr, err)}
			}
			err = rerr
		case err == nil || errors.Is(err, ErrDuplicate) || s.d.IsLastingRefusal(err):
			return err
		case ctx.Err() != nil:
			return &UnresolvedError{Last: lastCause(err, last)}
		}
		last = err
	}
}

// lastCause prefers the database's error to the context's own.
func lastCause(err, last error) error {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return last
	}
	return err
}

// SubmitTokenID returns the id of the row written with token, or 0.
func (s *Store) SubmitTokenID(ctx context.Context, token []byte) (int64, error) {
	var id int64
	err := s.db.GetContext(ctx, &id, s.sql.TaskIDBySubmitToken, token)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return id, err
}

// ConfirmSubmitLease renews the lease of a row this instance wrote leased
// for its first attempt, found only by resolution: it runs only if the row
// is still that first attempt, leased by owner (not rescued meanwhile).
// shard is the row's shard_key (Task.ShardKey).
func (s *Store) ConfirmSubmitLease(ctx context.Context, id int64, shard int, owner string, leaseUntil Millis) (bool, error) {
	n, err := s.exec(ctx, s.sql.ConfirmSubmitLease, leaseUntil, id, shard, owner)
	if err != nil || n == 1 {
		return n == 1, err
	}
	// MySQL counts a row whose lease_until already was leaseUntil (written
	// in the same millisecond) as unchanged: look again.
	var held int
	err = s.db.GetContext(ctx, &held, s.sql.SubmitLeaseHeld, id, shard, owner, leaseUntil)
	return held == 1, err
}

// ResolveHeldStart settles a start of held retries (startHeld) that failed
// with its outcome unknown: it runs the same fenced start again (which waits
// for the first, if still in flight on the server, and starts what it did
// not), then reads back each row the second run did not start to see
// whether the first did: running, leased by owner at attempt+1 with exactly
// the lease and modification time the start wrote. It keeps trying until
// ctx ends, then returns the last error.
func (s *Store) ResolveHeldStart(ctx context.Context, owner string, holds []HeldStart, leaseUntil, now Millis) ([]bool, error) {
	var last error
	for try := 1; ; try++ {
		if try > 1 && !sleepCtx(ctx, lockBackoff(try)) {
			return nil, &UnresolvedError{Last: last}
		}
		started, err := s.StartHeld(ctx, owner, holds, leaseUntil, now)
		if err == nil {
			err = s.readBackHeldStarts(ctx, owner, holds, started, leaseUntil, now)
		}
		if err == nil {
			return started, nil
		}
		if ctx.Err() != nil {
			return nil, &UnresolvedError{Last: lastCause(err, last)}
		}
		last = err
	}
}

// readBackHeldStarts sets started[i] for the holds the first (lost) start
// wrote, judged on their post-state.
func (s *Store) readBackHeldStarts(ctx context.Context, owner string, holds []HeldStart, started []bool, leaseUntil, now Millis) error {
	var ids []RowKey
	for i, h := range holds {
		if !started[i] {
			ids = append(ids, RowKey{ID: h.ID, Shard: h.Shard})
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var rows []struct {
		ID          int64  `db:"id"`
		State       State  `db:"task_status"`
		Owner       string `db:"lease_owner"`
		Attempt     int    `db:"execute_times"`
		LeaseUntil  Millis `db:"lease_until"`
		GmtModified Millis `db:"gmt_modified"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.sql.HeldStartStates(len(ids)), RowKeyArgs(ids)...); err != nil {
		return err
	}
	for _, r := range rows {
		for i, h := range holds {
			if h.ID == r.ID && !started[i] {
				started[i] = r.State == StateRunning && r.Owner == owner && r.Attempt == h.Attempt+1 && r.LeaseUntil == leaseUntil && r.GmtModified == now
			}
		}
	}
	return nil
}

// FinishLanded reports whether the finish f was written, for a finish that
// failed with its outcome unknown and whose Fence no longer holds: by its
// history row when it writes one (inserted only in the transaction that
// applied f), else by the task row's post-state (state, attempt count, due
// time, owner or hold, and the attempt's start and worker for an attempt).
func (s *Store) FinishLanded(ctx context.Context, f Finishing) (bool, error) {
	if a := f.HistoryRow(); a != nil {
		var n int
		err := s.db.GetContext(ctx, &n, s.sql.AttemptRecorded,
			a.TaskPK, a.Attempt, a.Kind, a.Worker, a.StartedAt, a.FinishedAt, a.Outcome)
		return n > 0, err
	}
	t, err := s.getOnShard(ctx, f.ID, f.Shard)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	attempt := f.Attempt
	if f.UndoAttempt {
		attempt--
	}
	ok := t.State == f.To && t.ExecuteTimes == attempt && t.ExecuteTime == f.Due
	if f.HoldUntil > 0 {
		ok = ok && t.LeaseOwner == f.Owner && t.LeaseUntil == f.HoldUntil
	} else {
		ok = ok && t.LeaseOwner == "" && t.LeaseUntil == 0
	}
	if a := f.History; a != nil && a.Kind == "attempt" {
		ok = ok && t.AttemptStartedAt == a.StartedAt && t.AttemptWorker == a.Worker
	}
	// (Not the messages: the Store may sanitise or truncate what it writes.)
	return ok, nil
}

package storage

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
)

// Group commit of submits. Concurrent submits (SubmitInsert) that arrive
// while a write of this Store's group is in flight queue, and are written
// together, in the next transaction, with one commit (one fsync): on SQLite,
// where every write is its own transaction behind the file's write lock,
// this is what lets concurrent submits run at the speed of the disk rather
// than one fsync each.
//
// There is no background goroutine and no timer: the first submit finds no
// write in flight and writes its row at once, alone, exactly as without
// grouping (a lone caller waits for no one). Submits arriving meanwhile
// queue; when the write in flight ends, the first queued submit leads the
// next group: it writes up to GroupCommitPolicy.MaxBatch queued rows in one
// transaction, answers each, and hands the lead on. A submit therefore waits
// for at most the write in flight and its own group's write.
//
// Each caller learns its own outcome:
//   - its row committed: nil, and its own id (each row's own LastInsertId in
//     the group's transaction, so the ids are exact on every engine, Galera's
//     1, 4, 7 included);
//   - its own INSERT refused inside the group (a duplicate unique key, its
//     data): the group goes on without it (the engines roll back the one
//     statement, not the transaction), and this caller alone runs its INSERT
//     again on its own, which gives the answer it would have had alone
//     (ErrDuplicate with the existing row's id, the data refusal);
//   - the group's transaction failed before its commit: nothing of it was
//     written, and each caller writes its row on its own (SubmitInsert's own
//     lock-conflict retries and resolution apply);
//   - the commit's answer was lost: each caller resolves its own row with its
//     own submit token (ResolveInsert), as a lone submit whose answer was
//     lost does.
// A caller returns only once its own row is committed (or known not to be).
// A caller whose context ends while it is still queued is taken out of the
// queue: nothing of it was sent, so it returns its context's error. Once its
// group is being written it waits for the group, whose write runs until the
// latest deadline among its callers (none if one of them has none).

// GroupCommitBatchDefault is the default bound on the rows of one group.
const GroupCommitBatchDefault = 128

// GroupCommitPolicy is an engine's choice of group commit for submits.
type GroupCommitPolicy struct {
	// MaxBatch bounds the rows of one group; 0 turns group commit off (every
	// submit writes its own row, as a lone submit does).
	MaxBatch int
}

// GroupCommitter is implemented by a Driver that groups concurrent submits
// (its choice, per engine, measured: docs/performance.md). A Driver without
// it writes every submit on its own.
type GroupCommitter interface {
	GroupCommit() GroupCommitPolicy
}

// groupCommit queues the submits of one Store.
type groupCommit struct {
	s        *Store
	maxBatch int

	mu       sync.Mutex
	inFlight bool         // a write of this group commit is running
	queue    []*groupCall // submits waiting for the next group, in arrival order
}

// groupCall is one submit in a group commit.
type groupCall struct {
	ctx   context.Context
	t     *Task
	token []byte

	// wake is closed when the call is answered (outcome set) or, with
	// group set, when it leads the next group.
	wake  chan struct{}
	group []*groupCall

	// Set by the group's writer before wake is closed.
	id      int64
	outcome groupOutcome
	err     error
}

// groupOutcome is what a group's write says about one of its rows.
type groupOutcome int

const (
	groupWritten   groupOutcome = iota // committed; id is the row's
	groupAlone                         // not written: write it on its own (err: why)
	groupFirstTry                      // a lone submit's INSERT failed (err): settle it as SubmitInsert does
	groupAmbiguous                     // the commit's answer was lost (err): resolve by token
)

func newGroupCommit(s *Store) *groupCommit {
	gc, ok := s.d.(GroupCommitter)
	if !ok {
		return nil
	}
	p := gc.GroupCommit()
	if p.MaxBatch <= 1 {
		return nil
	}
	return &groupCommit{s: s, maxBatch: p.MaxBatch}
}

// DisableGroupCommit makes every submit write its own row (tests and
// benchmarks compare both). Call it before the first submit.
func (s *Store) DisableGroupCommit() { s.group = nil }

// GroupCommitInUse reports whether concurrent submits are grouped.
func (s *Store) GroupCommitInUse() bool { return s.group != nil }

// GroupCommitState reports whether a group's write is in flight and how many
// submits queue for the next one (tests wait on it; nothing else should).
func (s *Store) GroupCommitState() (inFlight bool, queued int) {
	g := s.group
	if g == nil {
		return false, 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight, len(g.queue)
}

// submit writes c's row in the next group and settles its outcome.
func (g *groupCommit) submit(c *groupCall) (resolved bool, err error) {
	g.mu.Lock()
	if !g.inFlight {
		g.inFlight = true
		g.mu.Unlock()
		g.lead([]*groupCall{c})
	} else {
		g.queue = append(g.queue, c)
		g.mu.Unlock()
		if !g.await(c) {
			return false, c.ctx.Err() // never sent: certainly not written
		}
	}
	return g.s.settleGroupCall(c)
}

// await waits until c is answered, leading its group if it was chosen to.
// It reports false if c's context ended while c was still queued (c is then
// out of the queue and nothing of it was sent).
func (g *groupCommit) await(c *groupCall) bool {
	select {
	case <-c.wake:
	case <-c.ctx.Done():
		g.mu.Lock()
		for i, q := range g.queue {
			if q == c {
				g.queue = append(g.queue[:i], g.queue[i+1:]...)
				g.mu.Unlock()
				return false
			}
		}
		g.mu.Unlock()
		<-c.wake // taken into a group already: wait for it
	}
	if c.group != nil {
		g.lead(c.group)
	}
	return true
}

// lead writes batch (its first call is this goroutine's own), hands the lead
// to the next queued group, then answers every call of batch.
func (g *groupCommit) lead(batch []*groupCall) {
	g.s.writeGroup(batch)
	g.mu.Lock()
	if len(g.queue) == 0 {
		g.inFlight = false
	} else {
		n := min(len(g.queue), g.maxBatch)
		next := append([]*groupCall(nil), g.queue[:n]...)
		g.queue = append(g.queue[:0], g.queue[n:]...)
		next[0].group = next
		close(next[0].wake)
	}
	g.mu.Unlock()
	for _, c := range batch[1:] {
		close(c.wake)
	}
}

// groupContext is the context a group of several is written under: its
// callers' values, ended at the latest of their deadlines (never, if one of
// them has none). One caller's end does not cancel its neighbours' rows.
//
// (A context that can never end has no Done channel, which spares the
// SQLite driver a goroutine per statement watching for an interrupt.)
func groupContext(batch []*groupCall) (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(batch[0].ctx)
	var latest time.Time
	for _, c := range batch {
		d, ok := c.ctx.Deadline()
		if !ok {
			return ctx, func() {}
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(ctx, latest)
}

// writeGroup writes batch's rows and sets each call's outcome. A group of one
// is a lone submit: its INSERT runs on its own, in autocommit.
func (s *Store) writeGroup(batch []*groupCall) {
	if len(batch) == 1 {
		// Under the caller's own context, exactly as without grouping.
		c := batch[0]
		c.err = s.InsertToken(c.ctx, nil, c.t, c.token)
		c.id, c.outcome = c.t.ID, groupWritten
		if c.err != nil {
			c.outcome = groupFirstTry
		}
		return
	}
	ctx, cancel := groupContext(batch)
	defer cancel()
	rows := make([][]any, len(batch))
	for i, c := range batch {
		rows[i] = append(InsertArgs(c.t), c.token)
	}
	ids, errs, err := s.insertRows(ctx, rows)
	for i, c := range batch {
		switch {
		case err == nil && errs[i] == nil:
			c.id, c.outcome, c.err = ids[i], groupWritten, nil
		case err == nil:
			c.outcome, c.err = groupAlone, errs[i]
		case errors.Is(err, errCommitUnknown):
			c.outcome, c.err = groupAmbiguous, errors.Unwrap(err)
		default:
			c.outcome, c.err = groupAlone, err
		}
	}
}

// errCommitUnknown wraps a commit whose answer was lost.
var errCommitUnknown = errors.New("argo: the group commit's answer was lost")

type commitUnknownError struct{ err error }

func (e *commitUnknownError) Error() string        { return errCommitUnknown.Error() + ": " + e.err.Error() }
func (e *commitUnknownError) Is(target error) bool { return target == errCommitUnknown }
func (e *commitUnknownError) Unwrap() error        { return e.err }

// insertRows writes rows (each the arguments of Statements.InsertTask) in one
// transaction of single-row INSERTs, under the engine's write lock. ids[i]
// and errs[i] are row i's own: an INSERT refused for its data or a duplicate
// key is left out (the engine rolls back that statement alone) and the rest
// commit. err is a failure of the whole transaction: before its commit,
// nothing was written; a commit whose answer was lost is a
// *commitUnknownError.
func (s *Store) insertRows(ctx context.Context, rows [][]any) (ids []int64, errs []error, err error) {
	ids, errs = make([]int64, len(rows)), make([]error, len(rows))
	opts := s.d.TxOptions(sql.LevelDefault)
	if mu := s.d.WriteLock(); mu != nil {
		mu.Lock()
		defer mu.Unlock()
	}
	tx, err := s.db.BeginTxx(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	if err := s.insertRowsIn(ctx, tx, rows, ids, errs); err != nil {
		_ = tx.Rollback()
		return nil, nil, err
	}
	if err := tx.Commit(); err != nil {
		if s.d.OutcomeKnown(err) {
			return nil, nil, err
		}
		return nil, nil, &commitUnknownError{err}
	}
	return ids, errs, nil
}

func (s *Store) insertRowsIn(ctx context.Context, tx *sqlx.Tx, rows [][]any, ids []int64, errs []error) error {
	// Prepared once for the group: parsed once (SQLite), one round trip per
	// row rather than two (MySQL without client-side interpolation).
	stmt, err := tx.PrepareContext(ctx, s.sql.InsertTask)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i, args := range rows {
		res, err := stmt.ExecContext(ctx, args...)
		if err != nil {
			if s.d.IsDuplicate(err) || s.d.IsDataError(err) {
				errs[i] = err // this statement alone was rolled back
				continue
			}
			return err
		}
		if ids[i], err = res.LastInsertId(); err != nil {
			return err
		}
	}
	return nil
}

// settleGroupCall turns c's group outcome into SubmitInsert's answer, in c's
// own goroutine and under its own context.
func (s *Store) settleGroupCall(c *groupCall) (resolved bool, err error) {
	switch c.outcome {
	case groupWritten:
		c.t.ID = c.id
		return false, nil
	case groupAmbiguous:
		rctx, cancel := ResolveContext(c.ctx, SubmitResolveFloor)
		defer cancel()
		return true, s.ResolveInsert(rctx, c.t, c.token, c.err)
	case groupAlone:
		return s.submitAlone(c.ctx, c.t, c.token)
	}
	return s.settleSubmit(c.ctx, c.t, c.token, c.err)
}

// SubmitGroup writes tasks as one group, as if their submits had arrived
// together while a write was in flight (each under its own token), and
// settles each as SubmitInsert does: resolved[i] and errs[i] are tasks[i]'s
// own, and tasks[i].ID is set when its row exists. (The conformance suite
// drives a group through it; submits reach it through SubmitInsert.)
func (s *Store) SubmitGroup(ctx context.Context, tasks []*Task, tokens [][]byte) (resolved []bool, errs []error) {
	batch := make([]*groupCall, len(tasks))
	for i, t := range tasks {
		batch[i] = &groupCall{ctx: ctx, t: t, token: tokens[i]}
	}
	s.writeGroup(batch)
	resolved, errs = make([]bool, len(tasks)), make([]error, len(tasks))
	for i, c := range batch {
		resolved[i], errs[i] = s.settleGroupCall(c)
	}
	return resolved, errs
}

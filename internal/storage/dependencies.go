package storage

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/argo-retry/argo/argotype"
)

// Dependencies between tasks (migration 000007, docs/dependencies.md).
//
// An edge "task T runs after upstream U" is a row of argo_task_dep. A task
// with an upstream task not yet succeeded is written blocked: outside every
// claim's state set and the claim index, so it costs no claim polling. Every
// transaction that ends a task (finish, rescue, discard, force-fail) runs
// DependencySteps for it: they record the task's outcome on its edges, then
// make pending every blocked task whose edges are now all satisfied, or skip
// every blocked task downstream of it, transitively, when it ended dead or
// discarded. Each step is judged on the upstream row as it now is, not on
// whether the finish's own fence held, so a step running for a finish that
// lost its lease changes nothing wrong.

// Outcomes of an upstream task recorded on its edges (upstream_outcome).
const (
	UpstreamUnfinished = 0
	UpstreamSucceeded  = 1 // succeeded or recovered
	UpstreamFailed     = 2 // dead or discarded
)

// Step is one statement and its arguments.
type Step struct {
	Query string
	Args  []any
}

// upstreamOutcome maps a task's state to the outcome its edges record, or
// UpstreamUnfinished for a state that settles nothing downstream.
func upstreamOutcome(s State) int {
	switch s {
	case StateSucceeded, StateRecovered:
		return UpstreamSucceeded
	case StateDead, StateDiscarded:
		return UpstreamFailed
	}
	return UpstreamUnfinished
}

// SkipReason is the error_msg of a task skipped because upstream ended in state to.
func SkipReason(upstream int64, to State) string {
	if to == StateDiscarded {
		return fmt.Sprintf("upstream task %d was discarded", upstream)
	}
	return fmt.Sprintf("upstream task %d failed (%s)", upstream, to)
}

// DependencySteps are the statements that settle the downstream tasks of
// task id ending in state to, to run in the transaction that ends it (after
// its UPDATE). None for a state that settles nothing.
func DependencySteps(st *Statements, id int64, to State, now Millis) []Step {
	outcome := upstreamOutcome(to)
	if outcome == UpstreamUnfinished {
		return nil
	}
	steps := []Step{{st.DepRecordOutcome, []any{outcome, id, id, to}}}
	if outcome == UpstreamSucceeded {
		return append(steps, Step{st.DepRelease, []any{now, id}})
	}
	return append(steps, Step{st.DepSkip, []any{id, SkipReason(id, to), now}})
}

// settleDownstream runs DependencySteps for id through tx.
func (s *Store) settleDownstream(ctx context.Context, tx Execer, id int64, to State, now Millis) error {
	for _, step := range DependencySteps(s.sql, id, to, now) {
		if _, err := tx.ExecContext(ctx, step.Query, step.Args...); err != nil {
			return fmt.Errorf("argo: settling the downstream tasks of task %d: %w", id, err)
		}
	}
	return nil
}

// ErrDependency wraps every refusal of a submit's dependencies (unknown or
// failed upstream task, a cycle, an index out of range).
var ErrDependency = argotype.ErrDependency

// DependentTask is one task of a dependent submit: the row, the existing
// tasks it runs after (ids), and the tasks of the same submit it runs after
// (indices into the submit's slice).
type DependentTask struct {
	Task       *Task
	After      []int64
	AfterCalls []int
}

// InsertDependent writes tasks and their edges in one transaction, each
// task blocked while an upstream task has not yet succeeded. Existing
// upstream tasks are read locked (on MySQL, FOR UPDATE: a finish of one
// waits for this transaction, and then sees its edges). A cycle among the
// tasks, an index out of range, or an upstream task unknown, dead,
// discarded or skipped refuses the whole submit with an error wrapping
// ErrDependency, and nothing is written. It sets each Task's ID and State.
// A COMMIT whose answer is lost (the connection dropped, the server died,
// ctx ended) is resolved by the rows' submit tokens (resolveCommit): nil if
// the rows are there, the COMMIT's error if they are not, *UnresolvedError
// if the database could not be reached to tell before ctx's deadline (and
// at least SubmitResolveFloor).
func (s *Store) InsertDependent(ctx context.Context, tasks []DependentTask, now Millis) error {
	order, err := submitOrder(tasks)
	if err != nil {
		return err
	}
	var upstream []int64
	seen := map[int64]bool{}
	for _, dt := range tasks {
		for _, u := range dt.After {
			if !seen[u] {
				seen[u] = true
				upstream = append(upstream, u)
			}
		}
	}
	// A try rolled back for a lock conflict is run again (writeIso): each
	// try starts from the rows as the caller gave them, and decides blocked
	// or not from its own reads. (The first try may have read an upstream
	// task running that has succeeded since, its edges settled: keeping
	// that try's blocked would leave the task blocked for ever.)
	given := make([]Task, len(tasks))
	tokens := make([][]byte, len(tasks))
	for i, dt := range tasks {
		given[i] = *dt.Task
		tokens[i] = NewSubmitToken()
	}
	// committing: the last try's work is done and its COMMIT was sent, so a
	// failure whose outcome is unknown is the COMMIT's: resolved by the
	// rows' submit tokens (resolveCommit), never guessed.
	committing := false
	err = s.write(ctx, func(tx *sqlx.Tx) error {
		committing = false
		for i, dt := range tasks {
			*dt.Task = given[i]
		}
		states := map[int64]State{}
		if len(upstream) > 0 {
			var rows []struct {
				ID    int64 `db:"id"`
				State State `db:"task_status"`
			}
			args := anySlice(upstream)
			if err := tx.SelectContext(ctx, &rows, s.sql.DepUpstreamStates(len(upstream)), args...); err != nil {
				return err
			}
			for _, r := range rows {
				states[r.ID] = r.State
			}
			for _, u := range upstream {
				st, ok := states[u]
				switch {
				case !ok:
					return fmt.Errorf("%w: upstream task %d does not exist (purged, or a wrong id)", ErrDependency, u)
				case st == StateDead || st == StateDiscarded || st == StateSkipped:
					return fmt.Errorf("%w: upstream task %d is %s and will never succeed: requeue it and depend on the new task, or submit without it", ErrDependency, u, st)
				}
			}
		}
		var edges []any
		nEdges := 0
		var marked []int64 // upstream tasks whose finish settles the new edges
		seenMark := map[int64]bool{}
		mark := func(u int64) {
			if !seenMark[u] {
				seenMark[u] = true
				marked = append(marked, u)
			}
		}
		for _, i := range order {
			dt := tasks[i]
			t := dt.Task
			blocked := len(dt.AfterCalls) > 0
			for _, u := range dt.After {
				if upstreamOutcome(states[u]) != UpstreamSucceeded {
					blocked = true
				}
			}
			if blocked {
				t.State, t.ExecuteTimes, t.LeaseOwner, t.LeaseUntil = StateBlocked, 0, "", 0
			}
			if err := s.InsertToken(ctx, tx, t, tokens[i]); err != nil {
				return err
			}
			for _, u := range dt.After {
				edges = append(edges, t.ID, u, upstreamOutcome(states[u]), now)
				nEdges++
				if upstreamOutcome(states[u]) != UpstreamSucceeded {
					mark(u)
				}
			}
			for _, j := range dt.AfterCalls {
				edges = append(edges, t.ID, tasks[j].Task.ID, UpstreamUnfinished, now)
				nEdges++
				mark(tasks[j].Task.ID)
			}
		}
		if nEdges > 0 {
			if _, err := tx.ExecContext(ctx, s.sql.InsertDeps(nEdges), edges...); err != nil {
				return err
			}
		}
		// The upstream tasks' finishes must run the dependency statements
		// (finish_downstream.go). One that succeeded already ends no more.
		if err := s.markDownstream(ctx, tx, marked); err != nil {
			return err
		}
		committing = true
		return nil
	})
	if err != nil && committing && !s.OutcomeKnown(err) {
		ids, rerr := s.resolveCommit(ctx, tokens, err) // group_resolve.go
		for i, id := range ids {
			tasks[i].Task.ID = id
		}
		return rerr
	}
	return err
}

// submitOrder checks the AfterCalls of tasks and returns an order in which
// every task comes after the tasks of the submit it runs after.
func submitOrder(tasks []DependentTask) ([]int, error) {
	const (
		unvisited = iota
		visiting
		done
	)
	mark := make([]int, len(tasks))
	var order []int
	var visit func(i int, path []int) error
	visit = func(i int, path []int) error {
		switch mark[i] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("%w: the calls form a cycle (call indices %v then %d): a call cannot run after itself", ErrDependency, path, i)
		}
		mark[i] = visiting
		for _, j := range tasks[i].AfterCalls {
			if j < 0 || j >= len(tasks) {
				return fmt.Errorf("%w: call %d runs after call %d, which is not in the submit (indices 0..%d)", ErrDependency, i, j, len(tasks)-1)
			}
			if err := visit(j, append(path, i)); err != nil {
				return err
			}
		}
		mark[i] = done
		order = append(order, i)
		return nil
	}
	for i := range tasks {
		if tasks[i].Task == nil {
			return nil, fmt.Errorf("%w: call %d has no task", ErrDependency, i)
		}
		if err := visit(i, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// Dependency is one edge as the Inspector shows it: the task at the other
// end, its state, and the outcome the edge recorded.
type Dependency struct {
	TaskID  int64 `db:"other"`
	State   State `db:"task_status"`
	Outcome int   `db:"upstream_outcome"`
}

// Upstream reads the tasks id runs after, by id. A purged upstream task
// reads with State -1.
func (s *Store) Upstream(ctx context.Context, id int64) ([]Dependency, error) {
	var ds []Dependency
	err := s.db.SelectContext(ctx, &ds, s.sql.DepUpstream, id)
	return ds, err
}

// Downstream reads the tasks that run after id, by id.
func (s *Store) Downstream(ctx context.Context, id int64) ([]Dependency, error) {
	var ds []Dependency
	err := s.db.SelectContext(ctx, &ds, s.sql.DepDownstream, id)
	return ds, err
}

// unskipDownstream, in the transaction of a requeue of task old as task
// fresh, brings back the tasks skipped because old failed: each skipped
// task downstream of old (transitively) whose every other upstream task
// has succeeded, is unfinished, or is itself brought back returns to
// blocked, its error cleared, and its edge from old now runs from fresh.
// A skipped task that also waits on another failed task stays skipped (and
// so do the tasks after it). They never ran, so no idempotency key repeats.
func (s *Store) unskipDownstream(ctx context.Context, tx *sqlx.Tx, old, fresh int64, now Millis) error {
	var closure []struct {
		ID    int64 `db:"id"`
		State State `db:"task_status"`
	}
	if err := tx.SelectContext(ctx, &closure, s.sql.DepDownstreamClosure, old); err != nil {
		return err
	}
	back := map[int64]bool{}
	var ids []int64
	for _, c := range closure {
		if c.State == StateSkipped {
			back[c.ID] = true
			ids = append(ids, c.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	var edges []struct {
		Task     int64 `db:"task_pk"`
		Upstream int64 `db:"upstream_pk"`
		Outcome  int   `db:"upstream_outcome"`
		State    State `db:"task_status"`
	}
	if err := tx.SelectContext(ctx, &edges, s.sql.DepEdgesOf(len(ids)), anySlice(ids)...); err != nil {
		return err
	}
	for changed := true; changed; {
		changed = false
		for _, e := range edges {
			if !back[e.Task] || e.Upstream == old || back[e.Upstream] || e.Outcome == UpstreamSucceeded {
				continue
			}
			if e.Outcome == UpstreamFailed || e.State == StateSkipped || e.State < 0 {
				delete(back, e.Task) // waits on another failed task: stays skipped
				changed = true
			}
		}
	}
	ids = ids[:0]
	for id := range back {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil
	}
	if err := s.repointEdges(ctx, tx, fresh, old, ids); err != nil {
		return err
	}
	// A keyed task passed its order key on when it was skipped: it stays
	// skipped and is requeued as a new call at the end of its key
	// (order_requeue.go).
	plain, keyed, err := s.keyedAmong(ctx, tx, ids)
	if err != nil {
		return err
	}
	if len(plain) > 0 {
		if _, err := tx.ExecContext(ctx, s.sql.DepUnskip(len(plain)), append([]any{now}, anySlice(plain)...)...); err != nil {
			return err
		}
	}
	return s.requeueSkippedKeyed(ctx, tx, old, fresh, keyed, ids, now)
}

package storage

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

func nowMillis() Millis { return ToMillis(time.Now()) }

// InsertArgs are the arguments of Statements.InsertTask before the submit
// token: the columns of a new task row, error texts sanitised.
func InsertArgs(t *Task) []any {
	return []any{t.Name, t.State, t.ExecuteTimes, t.MaxAttempts, t.ExecuteTime, t.ParameterTypes, t.MethodName, t.MethodSignName, t.ExecuteIntervalSec, t.DelayTime, t.Parameter, t.PerformanceWay, t.ThreadWay, SanitizeErrorText(t.ErrorMsg), t.AlertExpression, t.AlertActionBeanName, t.FallbackClassName, SanitizeErrorText(t.FallbackErrorMsg), t.ShardKey, t.RetryPolicyJSON, t.LeaseOwner, t.LeaseUntil, t.UniqueKey, SanitizeErrorText(t.DiscardReason), t.GmtCreate, t.GmtModified, t.Tenant, t.TraceParent, t.OrderKey}
}

// Insert writes t through ex (the store's own handle when ex is nil) under a
// new submit token, and sets t.ID. A unique-key clash returns ErrDuplicate
// with t.ID set to the existing row.
func (s *Store) Insert(ctx context.Context, ex Execer, t *Task) error {
	return s.InsertToken(ctx, ex, t, NewSubmitToken())
}

// InsertToken is insert under the given submit token. A duplicate whose row
// carries the token means this very submit was written already (a
// resolution runs the INSERT again, resolve.go): t.ID is set to that
// row and it returns nil. (Through ex, the caller's transaction, the token
// is new: there is no resolution by running the INSERT again there.) A unique-key clash returns
// ErrDuplicate with t.ID set to the existing row.
func (s *Store) InsertToken(ctx context.Context, ex Execer, t *Task, token []byte) error {
	if err := s.CheckRowFits(ctx, t, false); err != nil {
		return err // nothing sent
	}
	var res sql.Result
	var err error
	if ex != nil {
		res, err = ex.ExecContext(ctx, s.sql.InsertTask, append(InsertArgs(t), token)...)
	} else {
		res, err = s.execResult(ctx, s.sql.InsertTask, append(InsertArgs(t), token)...)
	}
	if err != nil {
		// Any unique index may report the clash (MySQL names the first it
		// meets: uk_task_unique before uk_submit_token), so look for the token.
		if s.d.IsDuplicate(err) && ex == nil {
			id, qerr := s.readDuplicateID(ctx, s.sql.TaskIDBySubmitToken, token)
			if errors.Is(qerr, sql.ErrNoRows) {
				id, qerr = 0, nil
			}
			if qerr != nil {
				// Whose row it is is not known (duplicate_id.go).
				return fmt.Errorf("%w: %v", errTokenIDUnread, qerr)
			}
			if id != 0 {
				t.ID = id
				return nil
			}
			if !t.UniqueKey.Valid {
				// The only unique index this row can clash on is the token's,
				// yet the row is not visible (yet): the answer is not known.
				return errTokenNotVisible
			}
		}
		if s.d.IsDuplicate(err) && t.UniqueKey.Valid {
			id, qerr := s.readDuplicateID(ctx, s.sql.TaskIDByUniqueKey, t.Name, t.UniqueKey.String)
			if ex != nil && errors.Is(qerr, sql.ErrNoRows) {
				return errKeyInOwnTx // a row no other connection sees yet
			}
			if qerr != nil {
				return duplicateIDUnknown(qerr)
			}
			t.ID = id
			return ErrDuplicate
		}
		if tl := s.tooLargeRefusal(ctx, t, err); tl != nil {
			return tl
		}
		return err
	}
	t.ID, err = res.LastInsertId()
	return err
}

// ClaimDue leases up to limit due tasks (pending, retrying or exhausted, with
// execute_time <= now) named in names, of the given shards (all when shards
// is nil), oldest due first. MySQL: a plain read of candidates, then a
// fenced UPDATE by primary key of each (mysqldriver/claim.go).
// SQLite: one UPDATE … RETURNING in a BEGIN IMMEDIATE transaction.
func (s *Store) ClaimDue(ctx context.Context, owner string, now, leaseUntil Millis, limit int, names []string, shards []int) ([]*Task, error) {
	return s.ClaimScoped(ctx, owner, now, now, leaseUntil, limit, []ClaimGroup{{Names: names, Shards: shards}})
}

// ClaimScoped is claimDue over several (names, shards) groups at once, of
// tasks due at dueBy or earlier.
func (s *Store) ClaimScoped(ctx context.Context, owner string, now, dueBy, leaseUntil Millis, limit int, groups []ClaimGroup) ([]*Task, error) {
	scope, args := scopeCondition(groups)
	return s.claimIn(ctx, owner, now, dueBy, leaseUntil, limit, scope, args)
}

// claimIn is ClaimScoped's claim of the rows of scope (a condition and its
// arguments); "" claims nothing.
func (s *Store) claimIn(ctx context.Context, owner string, now, dueBy, leaseUntil Millis, limit int, scope string, args []any) ([]*Task, error) {
	if scope == "" {
		return nil, nil // no handler here, or no shard owned: claim nothing
	}
	leaseUntil = s.claimLease(leaseUntil) // claim_unknown.go
	// A held retry (lease_until in the future while claimable) is its
	// owner's to restart; no one claims it before the hold ends: the
	// driver's claim takes only rows due by dueBy whose lease ended by now.
	tasks, err := s.d.Claim(ctx, conn{s}, ClaimRequest{
		Owner: owner, Now: now, DueBy: dueBy, LeaseUntil: leaseUntil, Limit: limit,
		Scope: scope, ScopeArgs: args,
	})
	// Rows a take may have taken, its answer lost, are remembered to be
	// given back (claim_unknown.go); the rows taken for certain are kept.
	if s.noteClaim(err) != nil && len(tasks) > 0 {
		err = nil
	}
	// Oldest due first, whatever order the engine returned them in.
	slices.SortFunc(tasks, func(a, b *Task) int {
		return cmp.Or(cmp.Compare(a.ExecuteTime, b.ExecuteTime), cmp.Compare(a.ID, b.ID))
	})
	return tasks, err
}

// ClaimByID leases one task that is due now in the given from-state
// (pending, retrying or exhausted) and neither leased nor held: a row
// running or falling back under any owner, finished, or held for its
// owner's retry is left alone. It returns the claimed row, or nil if the row
// is not claimable (someone else holds it, it changed, or it is not yet
// visible). shard is the row's shard_key (Task.ShardKey), which the
// statements name beside the id (docs/deployment.md).
func (s *Store) ClaimByID(ctx context.Context, id int64, shard int, from State, owner string, now, leaseUntil Millis) (*Task, error) {
	if from != StatePending && from != StateRetrying && from != StateExhausted {
		return nil, fmt.Errorf("argo: claimByID of task %d from %s: only pending, retrying or exhausted tasks are claimed", id, from)
	}
	leaseUntil = s.claimLease(leaseUntil) // claim_unknown.go
	n, err := s.exec(ctx, s.sql.ClaimByID, owner, leaseUntil, now, id, shard, from, now, now)
	if err != nil || n == 0 {
		return nil, err
	}
	t, err := s.getOnShard(ctx, id, shard)
	if err != nil {
		return nil, err
	}
	if t.LeaseOwner != owner || !t.State.Leased() {
		return nil, nil
	}
	return t, nil
}

// Fence identifies the lease a write must still hold.
type Fence struct {
	ID      int64
	Shard   int
	Owner   string
	Attempt int   // execute_times when claimed
	From    State // running or falling_back
	// Downstream is the row's has_downstream as read (Task.HasDownstream):
	// false lets a finish that ends the task skip the dependency statements,
	// fenced on has_downstream = 0 as well (finish_downstream.go).
	Downstream bool
}

// Finishing is a fenced state change at the end of an attempt or fallback.
type Finishing struct {
	Fence
	To          State
	Due         Millis // next execute_time
	ErrMsg      *string
	FallbackErr *string
	UndoAttempt bool // give the attempt back (released without running)
	// Deferred counts the attempt as deferred by its callee (RetryAfter):
	// it keeps its number, and deferred_times grows by one, so that the
	// retry policy does not count it.
	Deferred bool
	History  *Attempt
	// direct writes it from the caller's goroutine, skipping the
	// completer's batching: a sync caller waits for this write alone.
	Direct bool
	// holdUntil > 0 keeps a retry leased by its owner until then (a held
	// retry, restarted by the owner's local timer; see retry_hold.go).
	HoldUntil Millis
}

// FinishBatchAsIs applies several fenced finishes in one transaction (one
// commit, so one log flush, for all of them), with their attempt rows in one
// multi-row INSERT (on MySQL with the onetrip pool, all in one round trip:
// finishBatchOnetrip). errs[i] is f[i]'s own outcome (ErrLeaseLost, a
// TransitionError, or nil); err is a failure of the whole transaction, in
// which case nothing was written.
func (s *Store) FinishBatchAsIs(ctx context.Context, fs []Finishing, now Millis) (errs []error, err error) {
	if errs, ok, err := s.d.FinishBatchOneTrip(ctx, fs, now); ok {
		if err == nil {
			s.finishAgainWithDependencies(ctx, fs, errs, now)
		}
		return errs, err
	}
	errs = make([]error, len(fs))
	err = s.write(ctx, func(tx *sqlx.Tx) error {
		var hist []*Attempt
		for i, f := range fs {
			errs[i] = checkTransition(f.ID, f.From, f.To)
			if errs[i] != nil {
				continue
			}
			n, err := s.execFinish(ctx, tx, f, now)
			if err == nil && n == 0 && f.SkipsDependencies() {
				// An edge may have been added since the row was read:
				// the finish with its dependency statements decides.
				f.Downstream = true
				n, err = s.execFinish(ctx, tx, f, now)
			}
			if err != nil {
				return err
			}
			if n == 0 {
				errs[i] = ErrLeaseLost
				continue
			}
			if a := f.HistoryRow(); a != nil {
				hist = append(hist, a)
			}
			for _, step := range FinishSteps(s.sql, f, now) {
				if _, err := tx.ExecContext(ctx, step.Query, step.Args...); err != nil {
					return fmt.Errorf("argo: settling the downstream tasks of task %d: %w", f.ID, err)
				}
			}
		}
		return s.insertAttempts(ctx, tx, hist)
	})
	return errs, err
}

// HistoryRow is the argo_task_attempt row f writes: none for an attempt
// that succeeded, which the task row records (FinishStatement).
// The row carries the move the finish makes (From, To: transitions.go).
func (f Finishing) HistoryRow() *Attempt {
	if f.History == nil || (f.History.Kind == "attempt" && f.History.Outcome == OutcomeSucceeded) {
		return nil
	}
	return withMove(f.History, f.From, f.To)
}

// FinishStatement is the fenced UPDATE of one finish in the engine's
// statements, and its arguments. An attempt's start and worker go on the
// task row, which makes it the record of a succeeded attempt.
func FinishStatement(st *Statements, f Finishing, now Millis) (string, []any) {
	set := "task_status = ?, execute_time = ?, lease_owner = '', lease_until = 0, gmt_modified = ?"
	args := []any{f.To, f.Due, now}
	if f.HoldUntil > 0 {
		// A held retry keeps its owner; lease_until keeps claims away.
		set = "task_status = ?, execute_time = ?, lease_until = ?, gmt_modified = ?"
		args = []any{f.To, f.Due, f.HoldUntil, now}
	}
	if a := f.History; a != nil && a.Kind == "attempt" {
		set += ", attempt_started_at = ?, attempt_worker = ?"
		args = append(args, a.StartedAt, a.Worker)
	}
	if f.ErrMsg != nil {
		set += ", error_msg = ?"
		args = append(args, SanitizeErrorText(*f.ErrMsg))
	}
	if f.FallbackErr != nil {
		set += ", fallback_error_msg = ?"
		args = append(args, SanitizeErrorText(*f.FallbackErr))
	}
	if f.UndoAttempt {
		set += ", execute_times = execute_times - 1"
	}
	if f.Deferred {
		set += ", deferred_times = deferred_times + 1"
	}
	if ps, pa := finishProgress(f); ps != "" {
		set += ps
		args = append(args, pa...)
	}
	if cs, ca := finishErrorCode(f); cs != "" {
		set += cs
		args = append(args, ca)
	}
	args = append(args, f.ID, f.Shard, f.From, f.Owner, f.Attempt)
	if f.SkipsDependencies() {
		return st.FinishUpdate(set) + NoDownstreamGuard, args
	}
	return st.FinishUpdate(set), args
}

// AttemptArgs are the arguments of one row of Statements.InsertAttempts,
// its error text sanitised.
func AttemptArgs(a *Attempt) []any {
	from, to := recordedMove(a)
	return []any{a.TaskPK, a.Attempt, a.Kind, a.Worker, a.StartedAt, a.FinishedAt, a.Outcome, SanitizeErrorText(a.Error), a.BackoffMs, a.Progress, SanitizeProgressNote(a.ProgressNote), a.ProgressAt, StorableErrorCode(a.ErrorCode), from, to, StorableTraceID(a.TraceID)}
}

// insertAttempts writes attempt rows with one multi-row INSERT.
func (s *Store) insertAttempts(ctx context.Context, ex Execer, as []*Attempt) error {
	if len(as) == 0 {
		return nil
	}
	args := make([]any, 0, 16*len(as))
	for _, a := range as {
		args = append(args, AttemptArgs(a)...)
	}
	_, err := ex.ExecContext(ctx, s.sql.InsertAttempts(len(as)), args...)
	return err
}

// InsertAttempt writes one attempt row through ex.
func (s *Store) InsertAttempt(ctx context.Context, ex Execer, a *Attempt) error {
	return s.insertAttempts(ctx, ex, []*Attempt{a})
}

// ExtendLeases renews, until until, the leases owner holds for the given
// attempts: a row is renewed only while it is running or falling back under
// owner with that attempt number. It returns the keys whose lease is gone
// (the row was rescued, claimed again, finished or deleted meanwhile); their
// running functions must stop. An error says nothing about the leases.
func (s *Store) ExtendLeases(ctx context.Context, owner string, keys []LeaseKey, until, now Millis) (lost []LeaseKey, err error) {
	lost, _, err = s.RenewLeases(ctx, owner, keys, nil, until, now)
	return lost, err
}

// RenewLeases is ExtendLeases carrying, in the same statement, the latest
// progress of some of the attempts (prog, each for one of keys): each is
// written to its task row only if the row's lease is renewed (the
// renewal's fence), with progress_at now. With no prog it is ExtendLeases'
// statement, unchanged. It also says which of the lost leases were lost to
// a cancel (cancel.go): their rows are discarded at the same attempt. It
// reads nothing more than ExtendLeases does.
func (s *Store) RenewLeases(ctx context.Context, owner string, keys []LeaseKey, prog []LeaseProgress, until, now Millis) (lost, cancelled []LeaseKey, err error) {
	for len(keys) > 0 {
		n := min(len(keys), maxLeaseBatch)
		l, c, err := s.extendLeaseBatch(ctx, owner, keys[:n], progressOf(prog, keys[:n]), until, now)
		if err != nil {
			return lost, cancelled, err
		}
		lost = append(lost, l...)
		cancelled = append(cancelled, c...)
		keys = keys[n:]
	}
	return lost, cancelled, nil
}

// maxLeaseBatch bounds the leases one renewal statement names.
const maxLeaseBatch = 500

func (s *Store) extendLeaseBatch(ctx context.Context, owner string, keys []LeaseKey, prog []LeaseProgress, until, now Millis) (lost, cancelled []LeaseKey, err error) {
	ids := make([]int64, len(keys))
	shards := make([]any, len(keys))
	pairs := make([]any, 0, 2*len(keys))
	for i, k := range keys {
		ids[i], shards[i] = k.ID, k.Shard
		pairs = append(pairs, k.ID, k.Attempt)
	}
	idArgs := append(anySlice(ids), shards...) // the n ids, the n shard keys
	q, args := s.sql.ExtendLeases(len(keys)), []any{until}
	if len(prog) > 0 {
		q, args = s.sql.ExtendLeasesProgress(len(keys), len(prog)), append(args, progressArgs(prog)...)
	}
	args = append(append(args, owner), idArgs...)
	n, err := s.exec(ctx, q, append(args, pairs...)...)
	if err != nil {
		return nil, nil, err
	}
	if n == int64(len(keys)) {
		return nil, nil, nil
	}
	// Fewer rows changed than leases named: find out which are still held
	// (MySQL counts a row whose lease_until was already until as unchanged).
	var rows []struct {
		ID      int64  `db:"id"`
		Shard   int    `db:"shard_key"`
		Attempt int    `db:"execute_times"`
		Owner   string `db:"lease_owner"`
		State   State  `db:"task_status"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.sql.LeaseHolders(len(ids)), idArgs...); err != nil {
		return nil, nil, err
	}
	held := map[LeaseKey]bool{}
	cancel := map[LeaseKey]bool{}
	for _, r := range rows {
		if r.Owner == owner && r.State.Leased() {
			held[LeaseKey{ID: r.ID, Shard: r.Shard, Attempt: r.Attempt}] = true
		}
		if cancelledLease(r.State) {
			cancel[LeaseKey{ID: r.ID, Shard: r.Shard, Attempt: r.Attempt}] = true
		}
	}
	for _, k := range keys {
		if !held[k] {
			lost = append(lost, k)
			if cancel[k] {
				cancelled = append(cancelled, k)
			}
		}
	}
	return lost, cancelled, nil
}

// OrphanMsgPrefix starts the error_msg of a due task no live instance can run.
const OrphanMsgPrefix = "no handler registered for task "

// FlagOrphans sets error_msg on up to limit tasks overdue since before
// cutoff whose name is not in known (the union of live instances' handlers),
// leaving their state and due time alone: they run as soon as an instance
// registers the name. It returns the name of each row it flagged.
func (s *Store) FlagOrphans(ctx context.Context, known []string, live []string, cutoff, now Millis, limit int) (flagged []string, err error) {
	args := append([]any{cutoff, OrphanMsgPrefix + "%"}, anySlice(known)...)
	var rows []struct {
		ID    int64  `db:"id"`
		Shard int    `db:"shard_key"`
		Name  string `db:"task_id"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.sql.OrphanCandidates(len(known)), append(args, limit)...); err != nil {
		return nil, err
	}
	for _, r := range rows {
		msg := fmt.Sprintf("%s%q on any live instance (%s): deploy code that registers it (for generated code, call its ArgoRegister function), or discard the task with argoctl; it keeps its attempts and runs once a handler exists",
			OrphanMsgPrefix, r.Name, strings.Join(live, ", "))
		c, err := s.exec(ctx, s.sql.FlagOrphan, SanitizeErrorText(msg), r.ID, r.Shard, r.Name)
		if err != nil {
			return flagged, err
		}
		if c > 0 {
			flagged = append(flagged, r.Name)
		}
	}
	return flagged, nil
}

// KnownTaskNames returns the union of the task names of instances that
// heartbeated since cutoff, and those instances.
func (s *Store) KnownTaskNames(ctx context.Context, cutoff Millis) (names, live []string, err error) {
	var rows []struct {
		ID      string         `db:"instance_id"`
		Names   string         `db:"task_names"`
		Tenants sql.NullString `db:"tenants"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.sql.LiveInstances, cutoff); err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	for _, r := range rows {
		live = append(live, r.ID)
		for _, n := range strings.Split(r.Names, "\n") {
			if n != "" && !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names, live, nil
}

// ExpiredLeases lists leased tasks whose lease ran out before now.
func (s *Store) ExpiredLeases(ctx context.Context, now Millis, limit int) ([]*Task, error) {
	var tasks []*Task
	err := s.db.SelectContext(ctx, &tasks, s.sql.ExpiredLeases, now, limit)
	return tasks, err
}

// RescueAsIs applies f to an expired lease only if the row still holds exactly
// that lease (same owner, attempt and lease_until): a worker that renewed
// or finished meanwhile wins, and the rescue is skipped (ErrLeaseLost).
// (rescue adds the degrade of a write refused for its data.)
func (s *Store) RescueAsIs(ctx context.Context, f Finishing, leaseUntil, now Millis) error {
	if err := checkTransition(f.ID, f.From, f.To); err != nil {
		return err
	}
	return s.write(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, s.sql.Rescue,
			f.To, f.Due, SanitizeErrorText(*f.ErrMsg), now, f.ID, f.Shard, f.From, f.Owner, f.Attempt, leaseUntil)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrLeaseLost
		}
		if err := s.settleDownstream(ctx, tx, f.ID, f.To, now); err != nil {
			return err
		}
		return s.InsertAttempt(ctx, tx, withMove(f.History, f.From, f.To))
	})
}

// Get reads one task.
func (s *Store) Get(ctx context.Context, id int64) (*Task, error) {
	var t Task
	err := s.db.GetContext(ctx, &t, s.sql.GetTask, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	return &t, err
}

// getOnShard reads one task by id and shard key (Statements.GetTaskOnShard):
// the read of a caller that holds the row's shard key.
func (s *Store) getOnShard(ctx context.Context, id int64, shard int) (*Task, error) {
	var t Task
	err := s.db.GetContext(ctx, &t, s.sql.GetTaskOnShard, id, shard)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %d (shard %d)", ErrNotFound, id, shard)
	}
	return &t, err
}

// Attempts reads the attempt history of a task, oldest first: the rows of
// argo_task_attempt, then the attempt that succeeded, from the task row.
func (s *Store) Attempts(ctx context.Context, id int64) ([]Attempt, error) {
	var out []Attempt
	if err := s.db.SelectContext(ctx, &out, s.sql.TaskAttempts, id); err != nil {
		return nil, err
	}
	var t []struct {
		State     State  `db:"task_status"`
		Attempt   int    `db:"execute_times"`
		StartedAt Millis `db:"attempt_started_at"`
		Worker    string `db:"attempt_worker"`
		Finished  Millis `db:"gmt_modified"`
		// The last report of the attempt (progress_attempt) that made one.
		Progress        float64 `db:"progress"`
		ProgressNote    string  `db:"progress_note"`
		ProgressAt      Millis  `db:"progress_at"`
		ProgressAttempt int     `db:"progress_attempt"`
	}
	if err := s.db.SelectContext(ctx, &t, s.sql.AttemptOnTaskRow, id); err != nil {
		return nil, err
	}
	if len(t) == 1 && t[0].State == StateSucceeded && t[0].StartedAt > 0 {
		row := t[0]
		// Rows written before migration 000002 record the success in the
		// table too. (An earlier attempt with the same number failed before
		// a requeue, which restarts the count.)
		recorded := slices.ContainsFunc(out, func(a Attempt) bool {
			return a.Kind == "attempt" && a.Attempt == row.Attempt && a.Outcome == OutcomeSucceeded
		})
		if !recorded {
			// Its move is the task row's: running → succeeded (its trace id
			// is not stored: a success writes nothing more than its UPDATE).
			a := Attempt{TaskPK: id, Attempt: row.Attempt, Kind: "attempt", Worker: row.Worker, StartedAt: row.StartedAt, FinishedAt: row.Finished, Outcome: OutcomeSucceeded,
				From: StateRunning, To: StateSucceeded}
			if row.ProgressAttempt == row.Attempt {
				a.Progress, a.ProgressNote, a.ProgressAt = row.Progress, row.ProgressNote, row.ProgressAt
			}
			out = append(out, a)
		}
	}
	return out, nil
}

// Requeue moves a dead or discarded task back to pending with a fresh
// attempt budget, due at now, recorded without a reason or operator
// (requeueRecorded).
func (s *Store) Requeue(ctx context.Context, id int64, now Millis) error {
	return s.RequeueRecorded(ctx, id, "", "", now)
}

// Discard ends a pending, retrying, exhausted or dead task with a reason,
// recorded in the operator trail without an operator (DiscardRecorded).
func (s *Store) Discard(ctx context.Context, id int64, reason string, now Millis) error {
	if strings.TrimSpace(reason) == "" {
		return errors.New("argo: discard needs a reason (it is recorded in discard_reason)")
	}
	if err := CheckOperatorText("discard reason", reason); err != nil {
		return err
	}
	return s.DiscardRecorded(ctx, id, reason, "", now)
}

// stateChanged turns "no row changed" into ErrNotFound or a TransitionError.
func (s *Store) stateChanged(ctx context.Context, id int64, to State, n int64, err error) error {
	if err != nil || n > 0 {
		return err
	}
	t, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if err := checkTransition(id, t.State, to); err != nil {
		return err
	}
	return fmt.Errorf("argo: task %d changed state meanwhile (now %s); try again", id, t.State)
}

// Purge deletes up to limit succeeded, recovered or discarded tasks last
// changed before cutoff, with their attempts, operator trail and discard
// requests; a requeued task (dead or discarded) goes once the task it was
// requeued into is gone or purgeable itself. It returns how many it deleted.
func (s *Store) Purge(ctx context.Context, cutoff Millis, limit int) (int, error) {
	var keys []RowKey
	if err := s.db.SelectContext(ctx, &keys, s.sql.PurgeCandidates, cutoff, limit); err != nil || len(keys) == 0 {
		return 0, err
	}
	return s.PurgeIDs(ctx, keys, cutoff)
}

// PurgeIDs deletes those of keys still purgeable, with their attempts. A
// task requeued since it was selected (a discarded one) is left whole: the
// rows to delete are read again, locked, inside the deleting transaction.
func (s *Store) PurgeIDs(ctx context.Context, keys []RowKey, cutoff Millis) (int, error) {
	var n int
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		var del []RowKey
		if err := tx.SelectContext(ctx, &del, s.sql.PurgeLock(len(keys)), append([]any{cutoff}, RowKeyArgs(keys)...)...); err != nil {
			return err
		}
		n = len(del)
		if n == 0 {
			return nil
		}
		if _, err := tx.ExecContext(ctx, s.sql.DeleteTasks(n), RowKeyArgs(del)...); err != nil {
			return err
		}
		ids := make([]int64, n)
		for i, k := range del {
			ids[i] = k.ID
		}
		args := anySlice(ids)
		for _, q := range []string{s.sql.DeleteAttempts(n), s.sql.DeleteOperatorActions(n), s.sql.DeleteDiscardRequests(n)} {
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return err
			}
		}
		// Their dependency edges, at either end (dependencies.go).
		_, err := tx.ExecContext(ctx, s.sql.DeleteDeps(n), append(args, args...)...)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// InList renders "(?, ?, …)" and its arguments.
func InList[T any](xs []T) (string, []any) {
	return Placeholders(len(xs)), anySlice(xs)
}

// anySlice converts xs to statement arguments.
func anySlice[T any](xs []T) []any {
	args := make([]any, len(xs))
	for i, x := range xs {
		args[i] = x
	}
	return args
}

// TaskState returns the state of task id; found is false when no such row
// is visible (not committed yet, rolled back, or purged).
func (s *Store) TaskState(ctx context.Context, id int64) (state State, found bool, err error) {
	err = s.db.GetContext(ctx, &state, s.sql.TaskState, id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return state, err == nil, err
}

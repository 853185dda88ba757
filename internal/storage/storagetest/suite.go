// Package storagetest is the storage conformance suite: every operation of
// storage.Store, run on a real database of each engine and on each write
// path its driver has, so that a driver (or a change to one) is known to
// keep argo's guarantees: claims take each row once, fenced writes lose to
// whoever holds the lease now, nothing is half written, purges are bounded,
// and data an engine refuses is degraded or refused with a clear error,
// never stored altered.
//
// Each driver package runs it from a test file (TestConformance in
// sqlitedriver/conformance_test.go and mysqldriver/conformance_test.go): Run
// with an Engine that opens a Store on a fresh database of its engine, once
// per write path the driver has. A third engine's driver does the same. The
// cases are in one file per area: insert.go, claim.go, finish.go, holds.go,
// rescue.go, purge.go, instances.go, inspector.go, data.go, requeue.go,
// operator.go, group_commit.go, flow.go, order.go, instance_scope.go,
// console_reads.go, backlog.go, progress.go, fair_share.go. Each case gets
// a database of its own, asserts on what the database holds afterwards (not
// only on what a call returned), and takes ids from what the database
// handed out (a Galera cluster hands out 1, 4, 7).
package storagetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
)

// Engine is the database and write path the suite runs on.
type Engine struct {
	// Open returns a Store on a new, empty, migrated database of the
	// engine, on the write path under test; the database and the Store are
	// released when t ends.
	Open func(t *testing.T) *storage.Store

	// RefusesOversizedValues says the engine refuses a value its column
	// cannot hold (too long for the column, bytes that are not UTF-8 in a
	// text column) instead of storing it as it is: MySQL and MariaDB in
	// strict mode do, SQLite does not. The data cases then expect a refusal
	// where SQLite's store the value whole.
	RefusesOversizedValues bool

	// OneWriter says the engine runs one writing transaction at a time
	// (SQLite): a transaction that inserted a row holds the write lock
	// until it ends, so ids follow commit order. Cases of interleavings
	// that need two writers at once are skipped there, saying so.
	OneWriter bool

	// LimitErrorTexts makes the error-text columns of s's database
	// (argo_task.error_msg and fallback_error_msg, argo_task_attempt.error_msg)
	// refuse, for their data, a text of more than maxChars characters: a
	// schema that differs from argo's, the trigger of the data-error
	// degrade. A later call replaces the limit (the tables are then empty).
	LimitErrorTexts func(t *testing.T, s *storage.Store, maxChars int)

	// NarrowErrorTextCharset, when the engine has column charsets, makes the
	// error-text columns of s's database a charset without 4-byte
	// characters (MySQL's utf8mb3), so that such a character is refused for
	// its data. nil: the engine has none, and the case is not run.
	NarrowErrorTextCharset func(t *testing.T, s *storage.Store)
}

// testCase is one case of the suite.
type testCase struct {
	name string
	run  func(t *testing.T, e Engine)
}

// areas are the suite's cases, by area (one file each).
func areas() []struct {
	name  string
	cases []testCase
} {
	return []struct {
		name  string
		cases []testCase
	}{
		{"Insert", insertCases()},
		{"Claim", claimCases()},
		{"ClaimUnknown", claimUnknownCases()},
		{"Finish", finishCases()},
		{"FinishDeferred", finishDeferredCases()},
		{"FinishDownstream", finishDownstreamCases()},
		{"Holds", holdCases()},
		{"ScheduledHolds", scheduledHoldCases()},
		{"Rescue", rescueCases()},
		{"Purge", purgeCases()},
		{"Instances", instanceCases()},
		{"Inspector", inspectorCases()},
		{"ErrorFilter", errorFilterCases()},
		{"Data", dataCases()},
		{"Requeue", requeueCases()},
		{"RequeueDependencies", requeueDependencyCases()},
		{"Operator", operatorCases()},
		{"Cancel", cancelCases()},
		{"OperatorNames", operatorNameCases()},
		{"TransientFail", transientFailCases()},
		{"GroupCommit", groupCommitCases()},
		{"Flow", flowCases()},
		{"FlowBudgetGiveBack", flowBudgetGiveBackCases()},
		{"FlowGrants", flowGrantCases()},
		{"Tenants", tenantCases()},
		{"Dependencies", dependencyCases()},
		{"Order", orderCases()},
		{"OrderRequeue", orderRequeueCases()},
		{"OrderOverlap", orderOverlapCases()},
		{"InstanceScope", instanceScopeCases()},
		{"ConsoleReads", consoleReadCases()},
		{"Backlog", backlogCases()},
		{"Progress", progressCases()},
		{"ErrorCode", errorCodeCases()},
		{"Transitions", transitionCases()}, // transitions.go
		{"Rekey", rekeyCases()},            // rekey.go
		{"FairShare", fairShareCases()},
		{"ShardKey", shardKeyCases()}, // shard_key.go
	}
}

// Run runs every case of the suite on e, each as a subtest Area/Case with a
// database of its own.
func Run(t *testing.T, e Engine) {
	if e.Open == nil || e.LimitErrorTexts == nil {
		t.Fatal("storagetest: Engine.Open and Engine.LimitErrorTexts are required")
	}
	for _, a := range areas() {
		t.Run(a.name, func(t *testing.T) {
			for _, c := range a.cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, e) })
			}
		})
	}
}

// The states and outcomes the cases use.
const (
	pending     = storage.StatePending
	running     = storage.StateRunning
	retrying    = storage.StateRetrying
	succeeded   = storage.StateSucceeded
	exhausted   = storage.StateExhausted
	fallingBack = storage.StateFallingBack
	recovered   = storage.StateRecovered
	dead        = storage.StateDead
	discarded   = storage.StateDiscarded

	outcomeFailed       = argotype.OutcomeFailed
	outcomeSucceeded    = argotype.OutcomeSucceeded
	outcomeLeaseExpired = argotype.OutcomeLeaseExpired
)

// Millis is a time in Unix milliseconds.
type Millis = storage.Millis

// caseTimeout bounds every wait of a case (claims racing, a lock held).
const caseTimeout = 60 * time.Second

// ctxFor returns a context that ends when t ends or after caseTimeout.
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
	t.Cleanup(cancel)
	return ctx
}

// newTask is a task row of the given name, state, due time and shard, as a
// submit writes one.
func newTask(name string, state storage.State, due Millis, shard int) *storage.Task {
	return &storage.Task{Name: name, State: state, MaxAttempts: 3, ExecuteTime: due, Parameter: `{"a":1}`,
		PerformanceWay: argotype.Immediate, ThreadWay: argotype.Async, ShardKey: shard,
		RetryPolicyJSON: `{"max_attempts":3}`, GmtCreate: due, GmtModified: due}
}

// leasedTask is newTask leased by owner at attempt until leaseUntil.
func leasedTask(name string, state storage.State, due Millis, shard int, owner string, attempt int, leaseUntil Millis) *storage.Task {
	task := newTask(name, state, due, shard)
	task.ExecuteTimes, task.LeaseOwner, task.LeaseUntil = attempt, owner, leaseUntil
	return task
}

// insert writes tasks (setting their ids) or fails the test.
func insert(t *testing.T, s *storage.Store, tasks ...*storage.Task) {
	t.Helper()
	for _, task := range tasks {
		if err := s.Insert(context.Background(), nil, task); err != nil {
			t.Fatalf("insert %s: %v", task.Name, err)
		}
	}
}

// get reads task id or fails the test.
func get(t *testing.T, s *storage.Store, id int64) *storage.Task {
	t.Helper()
	task, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("get %d: %v", id, err)
	}
	return task
}

// attempts reads task id's history or fails the test.
func attempts(t *testing.T, s *storage.Store, id int64) []storage.Attempt {
	t.Helper()
	atts, err := s.Attempts(context.Background(), id)
	if err != nil {
		t.Fatalf("attempts of %d: %v", id, err)
	}
	return atts
}

// claimByID claims the due pending task id for owner, or fails the test.
func claimByID(t *testing.T, s *storage.Store, id int64, owner string, now, leaseUntil Millis) *storage.Task {
	t.Helper()
	c, err := s.ClaimByID(context.Background(), id, get(t, s, id).ShardKey, pending, owner, now, leaseUntil)
	if err != nil || c == nil {
		t.Fatalf("claim %d for %s: %v, %v", id, owner, c, err)
	}
	return c
}

// fenceOf is the fence of a claimed task's lease, with the row's
// has_downstream as claimed (as the runtime builds it).
func fenceOf(c *storage.Task) storage.Fence {
	return storage.Fence{ID: c.ID, Shard: c.ShardKey, Owner: c.LeaseOwner, Attempt: c.ExecuteTimes, From: c.State, Downstream: c.HasDownstream}
}

// failure is the finish of claimed task c's attempt as failed with text,
// to state to, due again at due, with its history row.
func failure(c *storage.Task, to storage.State, due Millis, text string) storage.Finishing {
	msg := text
	return storage.Finishing{Fence: fenceOf(c), To: to, Due: due, ErrMsg: &msg,
		History: &storage.Attempt{TaskPK: c.ID, Attempt: c.ExecuteTimes, Kind: "attempt", Worker: c.LeaseOwner,
			StartedAt: c.GmtModified, FinishedAt: c.GmtModified + 10, Outcome: outcomeFailed, Error: text}}
}

// success is the finish of claimed task c's attempt as succeeded.
func success(c *storage.Task) storage.Finishing {
	return storage.Finishing{Fence: fenceOf(c), To: succeeded, Due: c.ExecuteTime,
		History: &storage.Attempt{TaskPK: c.ID, Attempt: c.ExecuteTimes, Kind: "attempt", Worker: c.LeaseOwner,
			StartedAt: c.GmtModified, FinishedAt: c.GmtModified + 10, Outcome: outcomeSucceeded}}
}

// dbx is s's handle with sqlx's helpers, for reading rows directly.
func dbx(s *storage.Store) *sqlx.DB { return sqlx.NewDb(s.DB(), s.Dialect()) }

// count runs a COUNT(*) query or fails the test.
func count(t *testing.T, s *storage.Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := dbx(s).Get(&n, query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// exec runs a setup statement or fails the test.
func exec(t *testing.T, s *storage.Store, query string, args ...any) {
	t.Helper()
	if _, err := s.DB().Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// idsOf lists the ids of tasks.
func idsOf(tasks []*storage.Task) []int64 {
	out := make([]int64, len(tasks))
	for i, task := range tasks {
		out[i] = task.ID
	}
	return out
}

// finishFunc writes one finish.
type finishFunc = func(ctx context.Context, s *storage.Store, f storage.Finishing, now Millis) error

// writePaths are the ways a finish can be written: alone (one round trip
// on an engine with a one-trip path, else a transaction) or in a batch.
var writePaths = []struct {
	name   string
	finish finishFunc
}{
	{"lone", func(ctx context.Context, s *storage.Store, f storage.Finishing, now Millis) error {
		return s.Finish(ctx, f, now)
	}},
	{"batch", func(ctx context.Context, s *storage.Store, f storage.Finishing, now Millis) error {
		errs, err := s.FinishBatch(ctx, []storage.Finishing{f}, now)
		if err != nil {
			return err
		}
		return errs[0]
	}},
}

// wantLeaseLost fails the test unless err is storage.ErrLeaseLost.
func wantLeaseLost(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("%s: %v, want storage.ErrLeaseLost", what, err)
	}
}

// wantTransitionInvalid fails the test unless err is a refused transition.
func wantTransitionInvalid(t *testing.T, what string, err error) {
	t.Helper()
	var te *argotype.TransitionError
	if !errors.As(err, &te) || !errors.Is(err, argotype.ErrTransitionInvalid) {
		t.Fatalf("%s: %v, want a %s", what, err, argotype.CodeTransitionInvalid)
	}
}

// nullKey is a unique key as stored.
func nullKey(k string) sql.NullString { return sql.NullString{String: k, Valid: true} }

// short quotes the head of a long text for a failure message.
func short(s string) string {
	if len(s) > 60 {
		return fmt.Sprintf("%q… (%d bytes)", s[:60], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// claimLeaseOK reports whether a claim asked to lease until want wrote
// lease end got: want, or a few milliseconds later (no two claims of one
// Store write the same lease end: Store.claimLease).
func claimLeaseOK(got, want Millis) bool { return got >= want && got < want+100 }

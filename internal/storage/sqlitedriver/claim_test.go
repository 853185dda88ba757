package sqlitedriver_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/argo-retry/argo/argotype"
	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/storage/sqlitedriver"
)

// commitRefused is a storage.Conn whose write transactions run their work
// and are then rolled back, their COMMIT refused.
type commitRefused struct{ db *sqlx.DB }

var errRefused = errors.New("COMMIT refused (injected)")

func (c commitRefused) DB() *sqlx.DB { return c.db }

func (c commitRefused) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return 0, errRefused
}

func (c commitRefused) Write(ctx context.Context, _ sql.IsolationLevel, fn func(tx *sqlx.Tx) error) error {
	tx, err := c.db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return errRefused
}

// The driver's claim returns none of the rows its UPDATE … RETURNING gave
// when its transaction does not commit (the rows stay as they were): the
// runtime would run them beside the next claimer's (the Store drops them
// too: storagetest claimNotCommittedTakesNothing).
func TestClaimReturnsNoRowOfATransactionNotCommitted(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	task := &storage.Task{Name: "a", State: storage.StatePending, MaxAttempts: 3, ExecuteTime: 1000, Parameter: "{}",
		PerformanceWay: argotype.Immediate, ThreadWay: argotype.Async, GmtCreate: 1000, GmtModified: 1000}
	if err := s.Insert(ctx, nil, task); err != nil {
		t.Fatal(err)
	}
	d := s.Driver().(*sqlitedriver.Driver)
	scope, args := "task_id = ?", []any{"a"}
	got, err := d.Claim(ctx, commitRefused{sqlx.NewDb(s.DB(), "sqlite")}, storage.ClaimRequest{
		Owner: "w1", Now: 10_000, DueBy: 10_000, LeaseUntil: 15_000, Limit: 10, Scope: scope, ScopeArgs: args})
	if !errors.Is(err, errRefused) || len(got) != 0 {
		t.Fatalf("claim whose COMMIT was refused: %d rows, error %v; want none and the refusal", len(got), err)
	}
	if row, err := s.Get(ctx, task.ID); err != nil || row.State != storage.StatePending || row.LeaseOwner != "" {
		t.Fatalf("task %d after the refused claim: %+v, %v; want pending, not leased", task.ID, row, err)
	}
}

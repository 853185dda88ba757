package sqlitedriver_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/storage/sqlitedriver"
	"github.com/argo-retry/argo/internal/storage/storagetest"
	"github.com/argo-retry/argo/internal/testdb"
)

// TestConformance runs the storage conformance suite on SQLite, whose one
// write path is a transaction under the file's write lock.
func TestConformance(t *testing.T) {
	storagetest.Run(t, storagetest.Engine{
		Open:            openStore,
		LimitErrorTexts: limitErrorTexts,
		OneWriter:       true,
	})
}

// openStore opens a Store on a new SQLite file, migrated (twice: migrations
// are idempotent), with the settings argo's OpenDB uses: WAL, a busy
// timeout, every transaction BEGIN IMMEDIATE.
func openStore(t *testing.T) *storage.Store {
	t.Helper()
	path := strings.TrimPrefix(testdb.SQLiteDSN(t), "sqlite:")
	db := sqlitedriver.Open("file:" + path + "?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate")
	db.SetMaxOpenConns(8)
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	for range 2 {
		if _, err := storage.Migrate(ctx, db, sqlitedriver.Name); err != nil {
			t.Fatal(err)
		}
	}
	s := storage.New(db, sqlitedriver.Name, storage.Options{WriteLock: &sync.Mutex{}})
	t.Cleanup(s.Close)
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// limitErrorTexts makes SQLite refuse an error text of more than maxChars
// characters as a CHECK constraint would. SQLite ignores declared column
// sizes and cannot add a CHECK to a column in place, so triggers stand in
// for the smaller column; their refusal reads as a CHECK constraint's,
// which the driver classes as a data error.
func limitErrorTexts(t *testing.T, s *storage.Store, maxChars int) {
	t.Helper()
	refuse := fmt.Sprintf("BEGIN SELECT RAISE(ABORT, 'CHECK constraint failed: an error text over %d characters'); END", maxChars)
	over := func(cols ...string) string {
		var conds []string
		for _, c := range cols {
			conds = append(conds, fmt.Sprintf("length(NEW.%s) > %d", c, maxChars))
		}
		return strings.Join(conds, " OR ")
	}
	for _, q := range []string{
		"DROP TRIGGER IF EXISTS limit_task_insert",
		"DROP TRIGGER IF EXISTS limit_task_update",
		"DROP TRIGGER IF EXISTS limit_attempt_insert",
		"CREATE TRIGGER limit_task_insert BEFORE INSERT ON argo_task WHEN " + over("error_msg", "fallback_error_msg") + " " + refuse,
		"CREATE TRIGGER limit_task_update BEFORE UPDATE OF error_msg, fallback_error_msg ON argo_task WHEN " + over("error_msg", "fallback_error_msg") + " " + refuse,
		"CREATE TRIGGER limit_attempt_insert BEFORE INSERT ON argo_task_attempt WHEN " + over("error_msg") + " " + refuse,
	} {
		if _, err := s.DB().Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

package runtime

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
)

// Helpers for runtime tests that set rows up through the store. The store's
// own behaviour is tested by the conformance suite
// (internal/storage/storagetest), run from each driver package.

// openTestStore opens the store of a migrated database, as the runtime does.
func openTestStore(t *testing.T, dsn string) *storage.Store {
	t.Helper()
	db, dialect, err := OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	if _, err := Migrate(ctx, db, dialect); err != nil {
		t.Fatal(err)
	}
	s := newStore(db, dialect)
	t.Cleanup(s.Close)
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// freshStore opens a store on a new database of the backend dsn names.
func freshStore(t *testing.T, backendDSN string) *storage.Store {
	t.Helper()
	if strings.HasPrefix(backendDSN, "mysql:") {
		return openTestStore(t, testdb.MySQLDSN(t))
	}
	return openTestStore(t, testdb.SQLiteDSN(t))
}

func sampleTask(name string, state State, due Millis, shard int) *Task {
	return &Task{Name: name, State: state, MaxAttempts: 3, ExecuteTime: due, Parameter: `{"a":1}`, PerformanceWay: Immediate, ThreadWay: Async,
		ShardKey: shard, RetryPolicyJSON: encodePolicy(fastPolicy(3)), GmtCreate: due, GmtModified: due}
}

func mustInsert(t *testing.T, s *storage.Store, tasks ...*Task) {
	t.Helper()
	for _, task := range tasks {
		if err := s.Insert(context.Background(), nil, task); err != nil {
			t.Fatal(err)
		}
	}
}

// applyMigrationFile runs the statements of sql/<dialect>/file on s, as a
// DBA applies a migration by hand.
func applyMigrationFile(t *testing.T, ctx context.Context, s *storage.Store, file string) {
	t.Helper()
	body, err := os.ReadFile("../sql/" + s.Dialect() + "/" + file)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range storage.SplitStatements(string(body)) {
		if _, err := s.DB().ExecContext(ctx, st); err != nil {
			t.Fatalf("%s: %v\n%s", file, err, st)
		}
	}
}

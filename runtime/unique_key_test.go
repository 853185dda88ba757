package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// TestUniqueKeysAreByteExact: unique-by keys compare byte for byte on both
// databases ("k" and "k " are two tasks; a key that is not UTF-8 is stored
// and read back as it is), a key of 255 bytes is stored and one of 256 is
// refused with the same error on both, before anything is written.
func TestUniqueKeysAreByteExact(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		rt := startRuntime(t, testConfig(dsn))
		def := &TaskDef{Name: "keyed", Mode: Scheduled, Delay: time.Hour, Policy: fastPolicy(1)}
		submit := func(key string) (int64, error) {
			return rt.Submit(ctx, Call{Task: def, Args: []byte(`{}`), UniqueKey: key})
		}
		keys := []string{"k", "k ", "k  ", "K", "\x00k", "k\xff", "k\xfe", "\xc3\xa9", "e\u0301", strings.Repeat("x", MaxUniqueKeyBytes)}
		ids := map[int64]string{}
		for _, key := range keys {
			id, err := submit(key)
			if err != nil {
				t.Fatalf("key %q: %v", key, err)
			}
			if prev, ok := ids[id]; ok {
				t.Fatalf("keys %q and %q share task %d", prev, key, id)
			}
			ids[id] = key
		}
		for id, key := range ids {
			again, err := submit(key)
			if !errors.Is(err, ErrDuplicate) || again != id {
				t.Errorf("key %q again: id %d, %v; want id %d and ErrDuplicate", key, again, err, id)
			}
			task, err := rt.Inspector().Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if !task.UniqueKey.Valid || task.UniqueKey.String != key {
				t.Errorf("task %d: stored key %q, want %q", id, task.UniqueKey.String, key)
			}
		}
		n, err := rt.Inspector().Count(ctx, Filter{Name: def.Name})
		if err != nil || n != len(keys) {
			t.Fatalf("%d tasks (%v), want %d", n, err, len(keys))
		}
		long := strings.Repeat("y", MaxUniqueKeyBytes+1)
		for _, tx := range []bool{false, true} {
			var err error
			if tx {
				err = withTx(t, rt, func(ex Execer) error {
					_, err := rt.SubmitTx(ctx, ex, Call{Task: def, Args: []byte(`{}`), UniqueKey: long})
					return err
				})
			} else {
				_, err = submit(long)
			}
			if !errors.Is(err, ErrNotPersisted) || !strings.Contains(err.Error(), "unique key of 256 bytes is longer than the limit of 255 bytes: hash longer keys") {
				t.Errorf("256-byte key (tx %v): %v, want ErrNotPersisted saying the limit and to hash", tx, err)
			}
		}
		if n, _ := rt.Inspector().Count(ctx, Filter{Name: def.Name}); n != len(keys) {
			t.Errorf("%d tasks after the refused keys, want %d", n, len(keys))
		}
	})
}

func withTx(t *testing.T, rt *Runtime, fn func(Execer) error) error {
	t.Helper()
	tx, err := rt.DB().Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// TestSchemaCheckWantsUniqueKeyBytes: a MySQL schema whose unique_key is
// still VARCHAR (000004 not applied) fails the schema check naming 000004.
func TestSchemaCheckWantsUniqueKeyBytes(t *testing.T) {
	t.Parallel() // owns its databases, shares no process-wide state, asserts no timing (helpers_test.go)
	ctx := context.Background()
	db, dialect, err := OpenDB(testdb.MySQLDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := Migrate(ctx, db, dialect); err != nil {
		t.Fatal(err)
	}
	s := newStore(db, dialect)
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatalf("migrated schema: %v", err)
	}
	if _, err := db.ExecContext(ctx, "ALTER TABLE argo_task MODIFY COLUMN unique_key VARCHAR(255) NULL DEFAULT NULL"); err != nil {
		t.Fatal(err)
	}
	var se *SchemaError
	if err := s.CheckSchema(ctx); !errors.As(err, &se) || se.Migration != "000004_unique_key_bytes.up.sql" {
		t.Fatalf("VARCHAR unique_key: %v, want a SchemaError naming 000004_unique_key_bytes.up.sql", err)
	}
}

package storagetest

import (
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// shardKeyCases: the statements by id name the row's shard_key beside its
// id (docs/deployment.md, "Vitess and ShardingSphere"), and the key they
// are given is the row's: a statement given another shard changes nothing.
// (internal/storage's TestByIDStatementsNameShardKey checks every
// statement's text; these cases check that the key is a real condition on
// each engine.)
func shardKeyCases() []testCase {
	return []testCase{
		{"WrongShardChangesNothing", shardKeyWrongShard},
	}
}

func shardKeyWrongShard(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const shard, other = 7, 8
	task := newTask("sk", pending, 10, shard)
	done := newTask("sk", succeeded, 10, shard)
	insert(t, s, task, done)

	// The claim by id.
	if c, err := s.ClaimByID(ctx, task.ID, other, pending, "me", 100, 5000); err != nil || c != nil {
		t.Fatalf("ClaimByID on shard %d of a row on shard %d: %v, %v; want nothing", other, shard, c, err)
	}
	if row := get(t, s, task.ID); row.State != pending || row.ExecuteTimes != 0 || row.LeaseOwner != "" {
		t.Fatalf("ClaimByID on the wrong shard changed the row: %+v", row)
	}
	c, err := s.ClaimByID(ctx, task.ID, shard, pending, "me", 100, 5000)
	if err != nil || c == nil || c.ShardKey != shard {
		t.Fatalf("ClaimByID on the row's shard: %v, %v", c, err)
	}

	// The lease renewal.
	wrong := storage.LeaseKey{ID: c.ID, Shard: other, Attempt: c.ExecuteTimes}
	if lost, err := s.ExtendLeases(ctx, "me", []storage.LeaseKey{wrong}, 9000, 200); err != nil || len(lost) != 1 {
		t.Fatalf("renewal on the wrong shard: lost %v (%v), want it lost", lost, err)
	}
	if row := get(t, s, task.ID); row.LeaseUntil != c.LeaseUntil {
		t.Fatalf("renewal on the wrong shard moved the lease to %d (was %d)", row.LeaseUntil, c.LeaseUntil)
	}
	right := storage.LeaseKey{ID: c.ID, Shard: shard, Attempt: c.ExecuteTimes}
	if lost, err := s.ExtendLeases(ctx, "me", []storage.LeaseKey{right}, 9000, 200); err != nil || len(lost) != 0 {
		t.Fatalf("renewal on the row's shard: lost %v (%v)", lost, err)
	}
	if row := get(t, s, task.ID); row.LeaseUntil != 9000 {
		t.Fatalf("renewal on the row's shard: lease until %d, want 9000", row.LeaseUntil)
	}

	// The purge.
	if n, err := s.PurgeIDs(ctx, []storage.RowKey{{ID: done.ID, Shard: other}}, 1000); err != nil || n != 0 {
		t.Fatalf("purge on the wrong shard deleted %d (%v)", n, err)
	}
	get(t, s, done.ID) // still there
	if n, err := s.PurgeIDs(ctx, []storage.RowKey{storage.KeyOf(done)}, 1000); err != nil || n != 1 {
		t.Fatalf("purge on the row's shard deleted %d (%v), want 1", n, err)
	}
}

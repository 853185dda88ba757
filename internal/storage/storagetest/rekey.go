package storagetest

import (
	"slices"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
)

// rekeyCases: the reads and fenced rewrites of a rekey (runtime.Inspector.Rekey,
// docs/encryption.md).
func rekeyCases() []testCase {
	return []testCase{
		{"BatchesInIDOrder", rekeyBatches},
		{"RewriteFencedOnTheArgumentsRead", rekeyFenced},
	}
}

// A batch reads at most its limit of rows after the given id, in id
// order, with the arguments of encrypted rows only.
func rekeyBatches(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	var tasks []*storage.Task
	for i := range 5 {
		task := newTask("rk", pending, 100, 0)
		if i%2 == 0 {
			task.Parameter = "argo:enc:v1:k1:AAAA" + string(rune('a'+i))
		}
		task.Tenant = "t"
		tasks = append(tasks, task)
	}
	insert(t, s, tasks...)
	var seen []int64
	var after int64
	for {
		rows, err := s.RekeyBatch(ctx, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 {
			break
		}
		if len(rows) > 2 {
			t.Fatalf("batch of %d rows, limit 2", len(rows))
		}
		for _, r := range rows {
			seen = append(seen, r.ID)
			want := ""
			if i := slices.IndexFunc(tasks, func(x *storage.Task) bool { return x.ID == r.ID }); i%2 == 0 {
				want = tasks[i].Parameter
			}
			if r.Parameter != want || r.Name != "rk" || r.Tenant != "t" {
				t.Fatalf("row %d read %+v, want arguments %q", r.ID, r, want)
			}
		}
		after = rows[len(rows)-1].ID
	}
	if !slices.IsSorted(seen) || len(seen) != len(tasks) {
		t.Fatalf("rows read %v, want all %d in id order", seen, len(tasks))
	}
}

// A rewrite lands only where the row still holds the arguments read, and
// changes no other column: a running row keeps its lease and state; a row
// whose arguments changed meanwhile (another rekey) keeps them.
func rekeyFenced(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	run := leasedTask("rk", running, 100, 0, "w1", 1, 9_000)
	run.Parameter = "argo:enc:v1:k1:RUN"
	moved := newTask("rk", pending, 100, 0)
	moved.Parameter = "argo:enc:v1:k1:OLD"
	insert(t, s, run, moved)
	done, err := s.RewriteParameters(ctx, []storage.Rewrite{
		{ID: run.ID, Old: "argo:enc:v1:k1:RUN", New: "argo:enc:v1:k2:RUN2"},
		{ID: moved.ID, Old: "argo:enc:v1:k1:STALE", New: "argo:enc:v1:k2:WRONG"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(done, []int64{run.ID}) {
		t.Fatalf("rewrites landed %v, want only %d", done, run.ID)
	}
	r := get(t, s, run.ID)
	if r.Parameter != "argo:enc:v1:k2:RUN2" || r.State != running || r.LeaseOwner != "w1" || r.LeaseUntil != 9_000 || r.ExecuteTimes != 1 || r.GmtModified != run.GmtModified {
		t.Fatalf("running row after its rewrite: %+v", r)
	}
	if m := get(t, s, moved.ID); m.Parameter != "argo:enc:v1:k1:OLD" {
		t.Fatalf("a row whose arguments changed was overwritten: %q", m.Parameter)
	}
}

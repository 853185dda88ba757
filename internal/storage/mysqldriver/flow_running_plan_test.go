package mysqldriver_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
)

// The cap's running count reads only the running rows, however many rows
// of the name the table keeps in other states. A group's 2,000 tasks run
// through gated claims and finish, then 2 are running again: MariaDB's
// ANALYZE of the count (alone, and inside the gated claim's candidates
// read) reports at most the 2 running rows read. Left to the optimizer, it read every row of the name
// (the unique key's task_id prefix), so each gated claim cost grew with the
// name's retained history.
func TestFlowRunningCountReadsOnlyRunningRows(t *testing.T) {
	s := openStore(t, testdb.MySQLDSN(t), true)
	ctx := context.Background()
	for i := range 2000 {
		mustInsert(t, s, sampleTask("capped", storage.StatePending, 1, i%4))
	}
	// The group's tasks run through gated claims of 16, each batch finished
	// before the next claim, as a busy queue's are.
	p := storage.FlowPolicy{Limit: 100_000}
	for {
		r, err := s.ClaimFlow(ctx, storage.FlowClaim{Group: "g", Names: []string{"capped"}, Policy: p, Owner: "a", Now: 10, LeaseUntil: 600_000, Limit: 16, Busy: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Tasks) == 0 {
			break
		}
		if _, err := s.DB().ExecContext(ctx, "UPDATE argo_task SET task_status = 3 WHERE task_status = 1"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DB().ExecContext(ctx, "UPDATE argo_task SET task_status = 1 WHERE task_id = 'capped' ORDER BY id LIMIT 2"); err != nil {
		t.Fatal(err)
	}
	sq := s.Driver().SQL()
	for _, c := range []struct {
		what, query string
		args        []any
	}{
		{"the running count", sq.FlowRunning(1), []any{"capped"}},
		{"the candidates read with the running count", sq.FlowCandidatesCounted(storage.StateSet(storage.WaitingStates...), "task_id IN (?)", 1),
			[]any{"capped", 10_000, 10_000, "capped", 16}},
	} {
		var plan string
		if err := s.DB().QueryRowContext(ctx, "ANALYZE FORMAT=JSON "+c.query, c.args...).Scan(&plan); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		var tree any
		if err := json.Unmarshal([]byte(plan), &tree); err != nil {
			t.Fatal(err)
		}
		if most := mostRowsRead(tree); most > 2 {
			t.Fatalf("%s read %v rows of one table access, want at most the 2 running rows:\n%s", c.what, most, plan)
		}
	}
}

// mostRowsRead is the largest r_rows of any table access in an ANALYZE
// FORMAT=JSON plan.
func mostRowsRead(node any) float64 {
	most := 0.0
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if f, ok := v.(float64); ok && k == "r_rows" {
				most = max(most, f)
			}
			most = max(most, mostRowsRead(v))
		}
	case []any:
		for _, v := range n {
			most = max(most, mostRowsRead(v))
		}
	}
	return most
}

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

// argoctl flow lists the groups; flow open stops a group's claims (on the
// database: a gated claim then admits nothing), flow close lets them go
// again; each is recorded with who and why (flow trail); an unknown group
// and a bad command line are refused clearly.
func TestFlowOpenClose(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			db, dialect := openDB(t, b.DSN)
			ctx := context.Background()
			if _, err := runtime.Migrate(ctx, db, dialect); err != nil {
				t.Fatal(err)
			}
			s := storage.New(db, dialect, storage.Options{})
			now := storage.ToMillis(time.Now())
			task := &storage.Task{Name: "print", State: storage.StatePending, MaxAttempts: 3, ExecuteTime: now - 1000, RetryPolicyJSON: "{}", GmtCreate: now, GmtModified: now}
			if err := s.Insert(ctx, nil, task); err != nil {
				t.Fatal(err)
			}
			claim := func() int {
				r, err := s.ClaimFlow(ctx, storage.FlowClaim{Group: "printer", Names: []string{"print"}, Policy: storage.FlowPolicy{Limit: 5}, Owner: "w", Now: storage.ToMillis(time.Now()), LeaseUntil: now + 60_000, Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				return len(r.Tasks)
			}
			failCtl(t, b.DSN, 1, `no such flow group "printer"`, "flow", "open", "printer")
			if n := claim(); n != 1 {
				t.Fatalf("claim took %d", n)
			}
			if _, err := db.ExecContext(ctx, "UPDATE argo_task SET task_status = ?, lease_owner = '', lease_until = 0 WHERE id = ?", storage.StatePending, task.ID); err != nil {
				t.Fatal(err)
			}
			if out := mustCtl(t, b.DSN, "flow", "trail", "printer"); !strings.Contains(out, "no breaker action by hand") {
				t.Fatalf("flow trail before any action: %q", out)
			}
			if out := mustCtl(t, b.DSN, "flow", "open", "printer", "-operator", "alice", "-reason", "toner fire"); !strings.Contains(out, "breaker opened") {
				t.Fatalf("flow open: %q", out)
			}
			if n := claim(); n != 0 {
				t.Fatalf("claim with the breaker opened by hand took %d", n)
			}
			out := mustCtl(t, b.DSN, "flow")
			if !strings.Contains(out, "printer") || !strings.Contains(out, "forced-open") || !strings.Contains(out, "print\n") {
				t.Fatalf("flow list:\n%s", out)
			}
			mustCtl(t, b.DSN, "flow", "close", "printer", "-operator", "bob")
			if n := claim(); n != 1 {
				t.Fatalf("claim after flow close took %d", n)
			}
			trail := mustCtl(t, b.DSN, "flow", "trail", "printer")
			lines := strings.Split(strings.TrimSpace(trail), "\n")
			if len(lines) != 3 || !strings.Contains(lines[1], "breaker_open") || !strings.Contains(lines[1], "alice") || !strings.Contains(lines[1], "toner fire") ||
				!strings.Contains(lines[2], "breaker_close") || !strings.Contains(lines[2], "bob") {
				t.Fatalf("flow trail: want the open by alice (toner fire), then the close by bob:\n%s", trail)
			}
			failCtl(t, b.DSN, 1, "NUL", "flow", "open", "printer", "-reason", "a\x00b")
			failCtl(t, b.DSN, 2, "flow: want no arguments", "flow", "shut", "printer")
		})
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

// TestShowDependencies: argoctl show names a task's upstream and
// downstream tasks with their states, and why it was skipped (text and
// JSON).
func TestShowDependencies(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			db, dialect := openDB(t, b.DSN)
			ctx := context.Background()
			if _, err := runtime.Migrate(ctx, db, dialect); err != nil {
				t.Fatal(err)
			}
			s := storage.New(db, dialect, storage.Options{})
			now := storage.ToMillis(time.Now())
			task := func(name string) *storage.Task {
				return &storage.Task{Name: name, State: storage.StatePending, MaxAttempts: 3, ExecuteTime: now + 600_000, Parameter: "{}", RetryPolicyJSON: "{}", GmtCreate: now, GmtModified: now}
			}
			g := []storage.DependentTask{{Task: task("print")}, {Task: task("ship"), AfterCalls: []int{0}}}
			if err := s.InsertDependent(ctx, g, now); err != nil {
				t.Fatal(err)
			}
			up, down := g[0].Task.ID, g[1].Task.ID
			out := mustCtl(t, b.DSN, "show", fmt.Sprint(down))
			if !strings.Contains(out, fmt.Sprintf("waits for upstream task %d (pending)", up)) || !strings.Contains(out, "state:") || !strings.Contains(out, "blocked (9)") {
				t.Fatalf("show of the waiting task:\n%s", out)
			}
			if err := s.DiscardRecorded(ctx, up, "label printer retired", "alice", now); err != nil {
				t.Fatal(err)
			}
			out = mustCtl(t, b.DSN, "show", fmt.Sprint(down))
			for _, want := range []string{"skipped (10)", "runs after:", fmt.Sprintf("%d (discarded)", up), fmt.Sprintf("upstream task %d was discarded", up)} {
				if !strings.Contains(out, want) {
					t.Fatalf("show of the skipped task lacks %q:\n%s", want, out)
				}
			}
			if out := mustCtl(t, b.DSN, "show", fmt.Sprint(up)); !strings.Contains(out, "runs before:") || !strings.Contains(out, fmt.Sprintf("%d (skipped)", down)) {
				t.Fatalf("show of the upstream task:\n%s", out)
			}
			var j struct {
				Upstream []struct {
					TaskID int64  `json:"task_id"`
					State  string `json:"state"`
				} `json:"upstream"`
				Why string `json:"dependency_why"`
			}
			if err := json.Unmarshal([]byte(mustCtl(t, b.DSN, "show", "-o", "json", fmt.Sprint(down))), &j); err != nil {
				t.Fatal(err)
			}
			if len(j.Upstream) != 1 || j.Upstream[0].TaskID != up || j.Upstream[0].State != "discarded" || !strings.Contains(j.Why, "was discarded") {
				t.Fatalf("show -o json: %+v", j)
			}
		})
	}
}

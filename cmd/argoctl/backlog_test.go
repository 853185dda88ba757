package main

import (
	"context"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// seedBacklog adds to seed's rows (whose due tasks are 2, retrying due 2m
// ago, and 4, pending due 30s ago, both without a tenant) tenant eu's
// mail.Send: one due 10m ago, one retry held by host-a (due in 1m, held
// for 2m) and one due in 5m.
func seedBacklog(t *testing.T, dsn string) {
	t.Helper()
	seed(t, dsn)
	db, _ := openDB(t, dsn)
	for _, r := range []struct {
		state           int
		due, leaseUntil time.Duration
		leaseOwner      string
	}{{0, -10 * time.Minute, 0, ""}, {2, time.Minute, 2 * time.Minute, "host-a-1234"}, {0, 5 * time.Minute, 0, ""}} {
		if _, err := db.ExecContext(context.Background(), `INSERT INTO argo_task (task_id, task_status, execute_times, execute_time, task_parameter, error_msg, fallback_error_msg, discard_reason, lease_owner, lease_until, tenant, gmt_create, gmt_modified) VALUES ('mail.Send', ?, 1, ?, '{}', '', '', '', ?, ?, 'eu', ?, ?)`,
			r.state, ms(r.due), r.leaseOwner, leaseMs(r.leaseUntil), ms(-time.Hour), ms(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBacklog: argoctl backlog lists the due tasks, the oldest due and the
// held retries per task name, tenant and flow group, the top -top of each
// and (other) for the rest, as a table and as JSON.
func TestBacklog(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seedBacklog(t, b.DSN)
			golden(t, "backlog_top1", mustCtl(t, b.DSN, "backlog", "-top", "1"))
			var got struct {
				At    string `json:"at"`
				Total struct {
					Due              int     `json:"due"`
					OldestAgeSeconds float64 `json:"oldest_age_seconds"`
					Held             int     `json:"held"`
				} `json:"total"`
				ByTask []struct {
					Name             string  `json:"name"`
					Other            bool    `json:"other"`
					Due              int     `json:"due"`
					OldestDue        *string `json:"oldest_due"`
					OldestAgeSeconds float64 `json:"oldest_age_seconds"`
					Held             int     `json:"held"`
				} `json:"by_task"`
				ByTenant []struct {
					Name string `json:"name"`
					Due  int    `json:"due"`
					Held int    `json:"held"`
				} `json:"by_tenant"`
				ByGroup []struct{} `json:"by_group"`
			}
			decode(t, mustCtl(t, b.DSN, "-o", "json", "backlog"), &got)
			if got.Total.Due != 3 || got.Total.Held != 1 || got.Total.OldestAgeSeconds != 600 {
				t.Fatalf("total %+v; want 3 due (tasks 2, 4 and mail.Send's), the oldest 600s, 1 held", got.Total)
			}
			if len(got.ByTask) != 3 || got.ByTask[0].Name != "mail.Send" || got.ByTask[0].Due != 1 || got.ByTask[0].Held != 1 ||
				got.ByTask[0].OldestAgeSeconds != 600 || got.ByTask[0].OldestDue == nil || *got.ByTask[0].OldestDue != "2025-03-01T11:50:00.000Z" || got.ByTask[0].Other {
				t.Fatalf("by task %+v; want mail.Send first (1 due 600s, 1 held), then the other two", got.ByTask)
			}
			if len(got.ByTenant) != 2 || got.ByTenant[0].Name != "" || got.ByTenant[0].Due != 2 || got.ByTenant[1].Name != "eu" || got.ByTenant[1].Held != 1 {
				t.Fatalf("by tenant %+v; want \"\" (2 due), eu (1 due, 1 held)", got.ByTenant)
			}
			if got.ByGroup == nil || len(got.ByGroup) != 0 {
				t.Fatalf("by group %+v; want [] (no flow group)", got.ByGroup)
			}
			failCtl(t, b.DSN, 2, "-top must be at least 1", "backlog", "-top", "0")
		})
	}
}

package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

// TestTenantFlags: list -tenant selects one tenant's tasks, stats -tenant
// counts them per state, show prints the tenant and the trace id.
func TestTenantFlags(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			db, dialect := openDB(t, b.DSN)
			all, err := runtime.NewInspector(db, dialect).List(context.Background(), runtime.Filter{})
			if err != nil || len(all) < 3 {
				t.Fatalf("seeded tasks: %d, %v; want 3 or more", len(all), err)
			}
			eu := []int64{all[0].ID, all[2].ID}
			slices.Sort(eu)
			const traceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
			for _, id := range eu {
				if _, err := db.Exec("UPDATE argo_task SET tenant = 'eu', trace_parent = ? WHERE id = ?", traceParent, id); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := db.Exec("UPDATE argo_task SET tenant = 'eu ' WHERE id = ?", all[1].ID); err != nil {
				t.Fatal(err)
			}
			var list struct {
				Total int `json:"total"`
				Tasks []struct {
					ID int64 `json:"id"`
				} `json:"tasks"`
			}
			decode(t, mustCtl(t, b.DSN, "-o", "json", "list", "-tenant", "eu"), &list)
			var got []int64
			for _, task := range list.Tasks {
				got = append(got, task.ID)
			}
			slices.Sort(got)
			if list.Total != 2 || !slices.Equal(got, eu) {
				t.Fatalf("list -tenant eu: total %d, tasks %v; want %v", list.Total, got, eu)
			}
			var stats struct {
				Tenant string `json:"tenant"`
				Total  int    `json:"total"`
			}
			decode(t, mustCtl(t, b.DSN, "-o", "json", "stats", "-tenant", "eu"), &stats)
			if stats.Tenant != "eu" || stats.Total != 2 {
				t.Fatalf("stats -tenant eu: %+v; want 2 tasks", stats)
			}
			show := mustCtl(t, b.DSN, "show", strconv.FormatInt(eu[0], 10))
			for _, want := range []string{"tenant:", " eu\n", "trace id:", "4bf92f3577b34da6a3ce929d0e0e4736"} {
				if !strings.Contains(show, want) {
					t.Fatalf("show %d lacks %q:\n%s", eu[0], want, show)
				}
			}
		})
	}
}

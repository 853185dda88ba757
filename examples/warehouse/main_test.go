package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// TestWarehouse runs the whole scenario with a fixed seed on SQLite and on
// MariaDB, and checks that the summary adds up.
func TestWarehouse(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			var out bytes.Buffer
			o := options{DSN: b.DSN, Orders: 16, FailRate: 0.35, Seed: 7, Timeout: 60 * time.Second,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			sum, err := run(context.Background(), o, &out)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			t.Log("\n" + out.String())
			if err := sum.Check(); err != nil {
				t.Fatal(err)
			}
			rows := map[string]Row{}
			total := 0
			for _, r := range sum.Rows {
				rows[r.Name] = r
				total += r.Submitted
			}
			if total != 6*o.Orders {
				t.Fatalf("%d tasks, want %d", total, 6*o.Orders)
			}
			// Orders 6 and 14 ask for the XL template: refused, permanent, dead after one attempt.
			if r := rows["PrintLabel"]; r.Dead != 2 || r.Attempts < r.Submitted {
				t.Fatalf("PrintLabel: %+v, want exactly 2 dead", r)
			}
			if r := rows["LightOn"]; r.Recovered != sum.HandSlips {
				t.Fatalf("LightOn recovered %d but %d hand slips printed", r.Recovered, sum.HandSlips)
			}
			for _, want := range []string{"pending", "task", "submitted", "total"} {
				if !strings.Contains(out.String(), want) {
					t.Fatalf("output lacks %q", want)
				}
			}
		})
	}
}

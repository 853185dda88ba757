package costgate

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

var (
	update = flag.Bool("update", false, "write the measured counts to testdata/cost_baseline.json (explain the change in the commit message)")
	logSQL = flag.Bool("logsql", false, "log every statement the workloads send")
)

const baselinePath = "testdata/cost_baseline.json"

// units per workload: the counts are divided by it.
const units = 5

// TestCostBaseline is the cost gate: it counts the statements, round trips
// and commits of each workload (workloads.go) per unit, on SQLite and — with
// ARGO_TEST_MYSQL_DSN — on MySQL by both write paths, and fails if any count
// rose more than 5% over testdata/cost_baseline.json. After a change that
// costs more (or less) on purpose:
//
//	go test ./cmd/argobench/internal/costgate -run TestCostBaseline -update
//
// (with ARGO_TEST_MYSQL_DSN set, or the MySQL rows are kept as they were),
// and say in the commit message why the counts moved. Under the race
// detector the workloads run but the counts are not compared (make test runs
// the gate again without -race).
func TestCostBaseline(t *testing.T) {
	if *logSQL {
		StatementLog = func(engine, workload, kind, text string) {
			if len(text) > 600 {
				text = text[:600] + "…"
			}
			t.Logf("%s %s: %s", engine, workload, text)
		}
		defer func() { StatementLog = nil }()
	}
	base, err := ReadBaseline(baselinePath)
	if err != nil {
		t.Fatal(err)
	}
	engines := []Engine{SQLiteEngine(func() string { return testdb.SQLiteDSN(t) })}
	if os.Getenv(testdb.EnvMySQLDSN) != "" || *update {
		newDSN := func() string { return strings.TrimPrefix(testdb.MySQLDSN(t), "mysql:") }
		engines = append(engines, MySQLOneTripEngine(newDSN), MySQLTxEngine(newDSN))
	} else {
		t.Logf("%s not set: the MySQL counts are not checked", testdb.EnvMySQLDSN)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	now := Baseline{}
	start := time.Now()
	for _, eng := range engines {
		now[eng.Name] = map[string]PerUnit{}
		for _, w := range Workloads {
			p, err := Measure(ctx, eng, w, units)
			if err != nil {
				t.Fatalf("%s on %s: %v", w.Name, eng.Name, err)
			}
			now[eng.Name][w.Name] = p
		}
	}
	t.Logf("measured %d engines × %d workloads × %d units in %v", len(engines), len(Workloads), units, time.Since(start).Round(time.Millisecond))
	changes := Compare(base, now)
	var table strings.Builder
	PrintTable(&table, changes, base, now)
	if *update {
		for eng, ws := range now {
			base[eng] = ws
		}
		if err := base.Write(baselinePath); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s:\n%s", baselinePath, table.String())
		return
	}
	if raceEnabled {
		// Under -race the counts are not compared (an extra poll or two
		// per unit is timing, not code); scripts/test.sh runs the gate
		// without -race after the race run.
		t.Logf("race detector on: counts measured, not compared with %s:\n%s", baselinePath, table.String())
		return
	}
	var rose, fell int
	for _, c := range changes {
		if c.Rose() {
			rose++
		}
		if c.Fell() {
			fell++
		}
	}
	switch {
	case rose > 0:
		t.Errorf("%d counts rose more than %.0f%% over %s:\n%s\n"+
			"If the rise is meant (a feature that must cost more), update the baseline:\n"+
			"  ARGO_TEST_MYSQL_DSN=... go test ./cmd/argobench/internal/costgate -run TestCostBaseline -update\n"+
			"and explain in the commit message which statement was added and why (docs/performance.md, \"The cost gate\").",
			rose, 100*Tolerance, baselinePath, table.String())
	case fell > 0:
		t.Logf("%d counts fell more than %.0f%% under %s — lower the baseline (-update) so that the gain is kept:\n%s", fell, 100*Tolerance, baselinePath, table.String())
	default:
		t.Logf("every count within %.0f%% of %s:\n%s", 100*Tolerance, baselinePath, table.String())
	}
}

package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/argo-retry/argo/cmd/argobench/internal/sqlcount"
	"github.com/argo-retry/argo/runtime"
)

// audit runs small versions of the workloads through the counting driver
// and records what each side asks of the database per call.
func (b *bencher) audit(ctx context.Context) error {
	nSync, nIns, nWork, nRetry := b.o.n(200, 20), b.o.n(2000, 20), b.o.n(2000, 20), b.o.n(200, 10)
	counted := func(db *sql.DB) runtime.Config { return runtime.Config{DB: db, Dialect: b.dialect} }
	type job struct {
		workload, side string
		calls          int
		fn             func(ctx context.Context, db *sql.DB, begin, end func()) (time.Duration, error)
	}
	jobs := []job{
		{"1 sync call", "argo", nSync + warmup(nSync), func(ctx context.Context, db *sql.DB, begin, end func()) (time.Duration, error) {
			rt, err := b.startArgo(ctx, counted(db))
			if err != nil {
				return 0, err
			}
			defer stopArgo(rt)
			begin()
			lat, err := b.argoSync(ctx, nSync)
			end()
			return sum(lat) * time.Duration(nSync+warmup(nSync)) / time.Duration(nSync), err
		}},
		{"1 sync call", "hand-written", nSync + warmup(nSync), func(ctx context.Context, db *sql.DB, begin, end func()) (time.Duration, error) {
			begin()
			lat, err := b.handSync(ctx, db, nSync)
			end()
			return sum(lat) * time.Duration(nSync+warmup(nSync)) / time.Duration(nSync), err
		}},
		{"2 insert", "argo", nIns, func(ctx context.Context, db *sql.DB, begin, end func()) (time.Duration, error) {
			rt, err := b.startArgo(ctx, counted(db))
			if err != nil {
				return 0, err
			}
			defer stopArgo(rt)
			begin()
			el, err := b.argoInsert(ctx, nIns)
			end()
			return el, err
		}},
		{"2 insert", "hand-written", nIns, func(ctx context.Context, db *sql.DB, begin, end func()) (time.Duration, error) {
			begin()
			el, err := b.handInsert(ctx, db, nIns)
			end()
			return el, err
		}},
		{"3 insert + work", "argo", nWork, func(ctx context.Context, db *sql.DB, begin, end func()) (time.Duration, error) {
			return b.argoWork(ctx, counted(db), nWork, begin, end)
		}},
		{"3 insert + work", "hand-written", nWork, func(ctx context.Context, db *sql.DB, begin, end func()) (time.Duration, error) {
			begin()
			el, err := b.handWork(ctx, db, nWork)
			end()
			return el, err
		}},
		{"4 retry (2 attempts)", "argo", nRetry, func(ctx context.Context, db *sql.DB, begin, end func()) (time.Duration, error) {
			t0 := time.Now()
			_, err := b.argoRetry(ctx, counted(db), nRetry, 0, begin, end)
			return time.Since(t0), err
		}},
	}
	for _, j := range jobs {
		if err := b.reset(ctx); err != nil {
			return err
		}
		c := sqlcount.NewCounter()
		db, err := openCounted(b.dsn, c)
		if err != nil {
			return err
		}
		var before, after sqlcount.Counts
		jctx, cancel := context.WithTimeout(ctx, b.o.timeout)
		wall, err := j.fn(jctx, db, func() { before = c.Snapshot() }, func() { after = c.Snapshot() })
		cancel()
		db.Close()
		if err != nil {
			return fmt.Errorf("%s, %s: %w", j.workload, j.side, err)
		}
		d := after.Sub(before)
		a := &AuditRow{Workload: j.workload, Side: j.side, Calls: j.calls, PerCall: map[string]float64{}, TimeUs: map[string]float64{}}
		for k, v := range d.N {
			per := float64(v) / float64(j.calls)
			us := float64(d.Time[k].Microseconds()) / float64(j.calls)
			a.PerCall[k], a.TimeUs[k] = per, us
			a.Ops += per
			a.DBTimeUs += us
			if k == "COMMIT" {
				a.Commits += per
			}
		}
		a.WallUs = float64(wall.Microseconds()) / float64(j.calls)
		b.rep.Audit = append(b.rep.Audit, a)
		b.logf("audit: %s, %s: %.2f operations per call", j.workload, j.side, a.Ops)
	}
	b.rep.Notes = append(b.rep.Notes, "audit: statements sent without a transaction commit on their own (autocommit), so commits/call counts only explicit COMMITs; on MySQL the audit handle interpolates arguments exactly when runtime.OpenDB does (probed), so a statement is one round trip, or a PREPARE plus an execute without interpolation")
	return nil
}

func sum(xs []time.Duration) time.Duration {
	var t time.Duration
	for _, x := range xs {
		t += x
	}
	return t
}

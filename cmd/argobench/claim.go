package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/argo-retry/argo/cmd/argobench/benchtask"
	"github.com/argo-retry/argo/runtime"
)

// The hand-written claim's statements (workloads.go handClaim), for EXPLAIN.
const (
	// MySQL: the candidate read; the fenced UPDATE by primary key follows.
	handClaimReadMySQL = "SELECT id, task_parameter FROM argo_task WHERE task_status = 0 AND execute_time <= ? ORDER BY execute_time LIMIT ?"
	// SQLite: the one claim statement, in a BEGIN IMMEDIATE transaction.
	handClaimSQLite = "UPDATE argo_task SET task_status = 1, execute_times = execute_times + 1, lease_owner = ?, lease_until = ?, gmt_modified = ? WHERE id IN (SELECT id FROM argo_task WHERE task_status = 0 AND execute_time <= ? ORDER BY execute_time LIMIT ?) RETURNING id, task_parameter"
)

func (b *bencher) handClaimQuery() string {
	if b.dialect == runtime.DialectSQLite {
		return handClaimSQLite
	}
	return handClaimReadMySQL
}

func (b *bencher) claim(ctx context.Context) error {
	if err := b.reset(ctx); err != nil {
		return err
	}
	argo, err := b.captureClaim(ctx, claimMarkers(b.dialect))
	if err != nil {
		return err
	}
	defer argo.close()
	if err := b.reset(ctx); err != nil {
		return err
	}
	sizes := []int{b.o.n(10_000, 100), b.o.n(100_000, 300), b.o.n(1_000_000, 1000)}
	backlog := max(b.o.n(20_000, 200), 2*(b.o.claims+1)*b.o.claimBatch)
	type point struct {
		label      string
		due        int
		argo, hand []float64
	}
	var points []*point
	loaded := 0
	for i, size := range sizes {
		t0 := time.Now()
		if err := b.bulkLoad(ctx, size-loaded, backgroundRow); err != nil {
			return fmt.Errorf("loading %d rows: %w", size, err)
		}
		if err := b.settle(ctx); err != nil {
			return err
		}
		b.logf("claim: loaded %d rows (table now %d) in %s", size-loaded, size, time.Since(t0).Round(time.Millisecond))
		loaded = size
		variants := []*point{{label: fmtCount(size) + " rows", due: (b.o.claims + 1) * b.o.claimBatch}}
		if i == len(sizes)-1 {
			variants = append(variants, &point{label: fmtCount(size) + " rows + " + fmtCount(backlog) + " due", due: backlog})
		}
		for _, p := range variants {
			if err := b.topUpDue(ctx, p.due); err != nil {
				return err
			}
			now := time.Now().UnixMilli()
			if err := b.explain(ctx, "argo", p.label, argo.read.Query, argo.readArgs(now, b.o.claimBatch)); err != nil {
				return fmt.Errorf("explain: %w", err)
			}
			if i == len(sizes)-1 {
				args := []any{now, b.o.claimBatch}
				if b.dialect == runtime.DialectSQLite {
					args = []any{"x", now, now, now, b.o.claimBatch}
				}
				if err := b.explain(ctx, "hand-written", p.label, b.handClaimQuery(), args); err != nil {
					return fmt.Errorf("explain: %w", err)
				}
			}
			for r := range b.o.runs {
				for k := range 2 {
					argoSide := (k+r)%2 == 0
					if err := b.topUpDue(ctx, p.due); err != nil {
						return err
					}
					per, err := b.timeClaims(ctx, argo, argoSide)
					if err != nil {
						return err
					}
					if argoSide {
						p.argo = append(p.argo, per)
					} else {
						p.hand = append(p.hand, per)
					}
				}
			}
			b.logf("claim: %s: argo %s, hand-written %s per claim of %d", p.label, fmtDuration(newStat(p.argo).Median), fmtDuration(newStat(p.hand).Median), b.o.claimBatch)
			points = append(points, p)
		}
	}
	for _, p := range points {
		b.rep.add(&Row{Workload: "5 claim at scale", Metric: fmt.Sprintf("claim %d, %s", b.o.claimBatch, p.label), Unit: UnitDuration, Argo: newStat(p.argo), Hand: newStat(p.hand)})
	}
	first, last := points[0], points[len(sizes)-1]
	growth := func(a, z []float64) []float64 {
		var out []float64
		for i := range min(len(a), len(z)) {
			out = append(out, z[i]/a[i])
		}
		return out
	}
	r := &Row{Workload: "5 claim at scale", Metric: fmt.Sprintf("claim growth %s/%s rows", strings.TrimSuffix(last.label, " rows"), strings.TrimSuffix(first.label, " rows")), Unit: UnitRatio,
		Argo: newStat(growth(first.argo, last.argo)), Hand: newStat(growth(first.hand, last.hand)), Target: "≤1.5× (argo)"}
	r.Met = metIf(r.Argo.Median <= 1.5)
	b.rep.Rows = append(b.rep.Rows, r)
	return nil
}

// timeClaims times -claims claims of -claimbatch rows, after one untimed
// claim, and returns the median per claim, in seconds.
func (b *bencher) timeClaims(ctx context.Context, argo *argoClaim, argoSide bool) (float64, error) {
	var lat []time.Duration
	for k := range b.o.claims + 1 {
		t0 := time.Now()
		var n int
		var err error
		if argoSide {
			n, err = argo.once(ctx, b.hand, b.dialect, b.o.claimBatch)
		} else {
			var c []claimed
			c, err = b.handClaim(ctx, b.hand, b.o.claimBatch)
			n = len(c)
		}
		if k > 0 {
			lat = append(lat, time.Since(t0))
		}
		if err != nil {
			return 0, err
		}
		if n != b.o.claimBatch {
			if argoSide {
				// What was replayed, to tell a changed claim from a table
				// that did not hold what the bench loaded.
				return 0, fmt.Errorf("a claim took %d rows, want %d (argo's captured read %q, captured arguments %v, clock %d)", n, b.o.claimBatch, argo.read.Query, argo.read.Args, argo.at)
			}
			return 0, fmt.Errorf("a claim took %d rows, want %d", n, b.o.claimBatch)
		}
	}
	return secs(percentile(sortedDurations(lat), 50)), nil
}

// settle lets the database absorb a bulk load before claims are timed: on
// SQLite it checkpoints the write-ahead log (otherwise the first commits
// after the load pay for the checkpoint); on MySQL it refreshes the table's
// statistics.
func (b *bencher) settle(ctx context.Context) error {
	q := "ANALYZE TABLE argo_task"
	if b.dialect == runtime.DialectSQLite {
		q = "PRAGMA wal_checkpoint(TRUNCATE)"
	}
	rows, err := b.admin.QueryContext(ctx, q)
	if err != nil {
		return err
	}
	return rows.Close()
}

// topUpDue deletes claimed rows and inserts due pending rows until want are due.
func (b *bencher) topUpDue(ctx context.Context, want int) error {
	if _, err := b.admin.ExecContext(ctx, "DELETE FROM argo_task WHERE task_status = 1"); err != nil {
		return err
	}
	have, err := countWhere(ctx, b.admin, "task_status = 0 AND execute_time <= ?", time.Now().UnixMilli())
	if err != nil {
		return err
	}
	if have >= want {
		return nil
	}
	now := time.Now().UnixMilli()
	return b.bulkLoad(ctx, want-have, func(i int) (int, int64) { return statePending, now - 60_000 + int64(i%50_000) })
}

// backgroundRow is a row the claim must not touch: half succeeded (due in
// the past), the rest pending or retrying in the future.
func backgroundRow(i int) (state int, due int64) {
	now := time.Now().UnixMilli()
	switch i % 10 {
	case 0, 1, 2, 3, 4:
		return stateSucceeded, now - 86_400_000 + int64(i%86_400_000)
	case 5, 6, 7:
		return statePending, now + 86_400_000 + int64(i)
	}
	return 2, now + 3_600_000 + int64(i)
}

// bulkLoad inserts n Work rows with multi-row INSERTs of literal values,
// 1,000 rows a statement, 20 statements a transaction.
func (b *bencher) bulkLoad(ctx context.Context, n int, kind func(i int) (int, int64)) error {
	const perStmt, perTx = 1000, 20
	_, _, work, _ := benchtask.Defs()
	row := newHandRow(work)
	head := "INSERT INTO argo_task (task_id, task_status, execute_times, max_attempts, execute_time, parameter_types, method_name, method_sign_name, execute_interval_sec, delay_time, task_parameter, performance_way, thread_way, error_msg, alert_expression, alert_action_bean_name, fallback_class_name, fallback_error_msg, shard_key, retry_policy, lease_owner, lease_until, discard_reason, gmt_create, gmt_modified) VALUES "
	fixedA := fmt.Sprintf("%s, ", quote(work.Name))
	policy := quote(row.policyJSON)
	now := time.Now().UnixMilli()
	var sb strings.Builder
	done := 0
	for done < n {
		tx, err := b.admin.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for s := 0; s < perTx && done < n; s++ {
			sb.Reset()
			sb.WriteString(head)
			for r := 0; r < perStmt && done < n; r++ {
				state, due := kind(done)
				execTimes := 0
				if state != statePending {
					execTimes = 1
				}
				if r > 0 {
					sb.WriteString(", ")
				}
				fmt.Fprintf(&sb, "(%s%d, %d, %d, %d, %s, %s, %s, %d, 0, '{\"n\":%d}', 1, 1, '', '', '', '', '', %d, %s, '', 0, '', %d, %d)",
					fixedA, state, execTimes, row.maxAtt, due, quote(work.ParameterTypes), quote(work.MethodName), quote(work.Signature), row.initialSec, done, done%64, policy, now, now)
				done++
			}
			if _, err := tx.ExecContext(ctx, sb.String()); err != nil {
				tx.Rollback()
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// quote renders s as an SQL string literal (the bench's own constants only).
func quote(s string) string {
	if strings.ContainsAny(s, `\`) {
		panic("argobench: backslash in a bulk-load literal")
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

func fmtCount(n int) string {
	switch {
	case n >= 1_000_000 && n%100_000 == 0:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
	case n >= 1000 && n%100 == 0:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e3), ".0") + "k"
	}
	return fmt.Sprint(n)
}

// explain records the plan of query (as timed) at one table size.
func (b *bencher) explain(ctx context.Context, side, label, query string, args []any) error {
	q := "EXPLAIN " + query
	if b.dialect == runtime.DialectSQLite {
		q = "EXPLAIN QUERY PLAN " + query
	}
	rows, err := b.admin.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	p := &Plan{Side: side, Rows: label, Query: query}
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if b.dialect == runtime.DialectSQLite {
			p.Plan = append(p.Plan, vals[len(vals)-1].String)
			continue
		}
		var parts []string
		for i, c := range cols {
			switch strings.ToLower(c) {
			case "id", "select_type", "partitions", "filtered":
				continue
			}
			if vals[i].Valid {
				parts = append(parts, c+"="+vals[i].String)
			}
		}
		p.Plan = append(p.Plan, strings.Join(parts, " "))
	}
	b.rep.Plans = append(b.rep.Plans, p)
	return rows.Err()
}

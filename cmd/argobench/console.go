package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/runtime"
)

// ---------------------------------------------------------------- 8. console reads

// consoleDefaultRows is -rows's default: the argo_task rows of the console
// workload (times -scale). The figure in docs/console.md is -rows 1000000.
const consoleDefaultRows = 100_000

// consoleReps is how many times each console read is timed per run.
const consoleReps = 20

// consoleNames are the task names of the console workload's rows; their
// order sets which names the substring filters match.
var consoleNames = []string{
	"argobench.billing.Charge", "argobench.billing.Refund", "argobench.billing.Invoice", "argobench.mail.Send",
	"argobench.mail.Bounce", "argobench.sms.Send", "argobench.push.Notify", "argobench.search.Index",
	"argobench.search.Reindex", "argobench.ledger.Post", "argobench.ledger.Reverse", "argobench.crm.Sync",
	"argobench.crm.Merge", "argobench.shipping.Label", "argobench.shipping.Track", "argobench.tax.Quote",
	"argobench.audit.Record", "argobench.export.Csv", "argobench.webhook.Deliver", "argobench.cache.Warm",
}

// consoleRow is the state, attempts made and change time of row i of n
// (ids rise with time over the last 30 days): 80% succeeded (a tenth of
// them after one retry), 10% dead after 3 attempts, 5% pending, 3%
// retrying, 1% discarded, 1% pending and due now.
func consoleRow(i, n int, now int64) (state, attempts int, due, modified int64) {
	const month = 30 * 86_400_000
	modified = now - month + int64(i)*month/int64(n)
	switch k := i % 100; {
	case k < 80:
		attempts = 1
		if k < 8 {
			attempts = 2
		}
		return int(runtime.StateSucceeded), attempts, modified, modified
	case k < 90:
		return int(runtime.StateDead), 3, modified, modified
	case k < 95:
		return int(runtime.StatePending), 0, now + 3_600_000, modified
	case k < 98:
		return int(runtime.StateRetrying), 1, now + 60_000, modified
	case k < 99:
		return int(runtime.StateDiscarded), 1, modified, modified
	}
	return int(runtime.StatePending), 0, now - 1000, modified
}

// console measures what the console's pages read (the console package
// through runtime.Inspector) on a table of -rows rows: the task list
// (List of a page of 50 plus CountUpTo 10,000) with no filter, by state,
// name substring, tenant and unique key, its next page by key, and the
// overview of the last 24 hours; then the console's pages as full HTTP GETs
// (consolePages, timeConsolePages). The rows are written by multi-row INSERTs
// of literal values (consoleLoad), not through Submit: a million submits
// would take the bench far longer than the reads it measures.
func (b *bencher) console(ctx context.Context) error {
	n := b.o.n(b.o.consoleRows, 100)
	if err := b.reset(ctx); err != nil {
		return err
	}
	t0 := time.Now()
	if err := b.consoleLoad(ctx, n); err != nil {
		return fmt.Errorf("loading %d rows: %w", n, err)
	}
	if err := b.settle(ctx); err != nil {
		return err
	}
	b.logf("console: %d rows loaded in %s", n, time.Since(t0).Round(time.Millisecond))
	in := runtime.NewInspector(b.admin, b.dialect)
	first, err := in.List(ctx, runtime.Filter{Limit: 50})
	if err != nil {
		return err
	}
	if len(first) == 0 {
		return fmt.Errorf("the first page is empty")
	}
	var maxID int64
	if err := b.admin.QueryRowContext(ctx, "SELECT MAX(id) FROM argo_task").Scan(&maxID); err != nil {
		return err
	}
	type figures struct{ p50, p95 []float64 }
	pages := []struct {
		label string
		f     runtime.Filter
	}{
		{"no filter", runtime.Filter{}},
		{"state=dead", runtime.Filter{States: []runtime.State{runtime.StateDead}}},
		{"name contains \"refund\"", runtime.Filter{NameContains: "refund"}},
		{"name contains \"nomatch\"", runtime.Filter{NameContains: "nomatch"}},
		{"tenant=t3", runtime.Filter{Tenant: "t3"}},
		{"unique key", runtime.Filter{UniqueKey: fmt.Sprintf("k-%d", (n/2)/3*3)}},
		{"next page (before=last id)", runtime.Filter{BeforeID: first[len(first)-1].ID}},
		{"state=dead, before=mid id", runtime.Filter{States: []runtime.State{runtime.StateDead}, BeforeID: maxID / 2}},
	}
	dead, err := in.List(ctx, runtime.Filter{States: []runtime.State{runtime.StateDead}, Limit: 1})
	if err != nil || len(dead) == 0 {
		return fmt.Errorf("no dead task for the task page: %v", err)
	}
	httpPages := consolePages(first, dead[0].ID)
	httpFigures := make([]figures, len(httpPages))
	st := storage.New(b.admin, b.dialect, storage.Options{}) // for the statements' plans
	label := fmtCount(n) + " rows"
	lists, counts, totals := make([]figures, len(pages)), make([]figures, len(pages)), make([]figures, len(pages))
	var overview figures
	for range b.o.runs {
		for i, p := range pages {
			var list, count, total []time.Duration
			for range consoleReps {
				f := p.f
				f.Limit = 50
				t := time.Now()
				if _, err := in.List(ctx, f); err != nil {
					return err
				}
				l := time.Since(t)
				if _, _, err := in.CountUpTo(ctx, f, 10000); err != nil {
					return err
				}
				list, count, total = append(list, l), append(count, time.Since(t)-l), append(total, time.Since(t))
			}
			for _, x := range []struct {
				f *figures
				d []time.Duration
			}{{&lists[i], list}, {&counts[i], count}, {&totals[i], total}} {
				s := sortedDurations(x.d)
				x.f.p50 = append(x.f.p50, secs(percentile(s, 50)))
				x.f.p95 = append(x.f.p95, secs(percentile(s, 95)))
			}
		}
		var ov []time.Duration
		for range consoleReps {
			t := time.Now()
			if _, err := in.Overview(ctx, time.Now().Add(-24*time.Hour), 5*time.Minute); err != nil {
				return err
			}
			ov = append(ov, time.Since(t))
		}
		s := sortedDurations(ov)
		overview.p50 = append(overview.p50, secs(percentile(s, 50)))
		overview.p95 = append(overview.p95, secs(percentile(s, 95)))
		p50, p95, err := timeConsolePages(ctx, in, httpPages)
		if err != nil {
			return err
		}
		for i := range httpPages {
			httpFigures[i].p50 = append(httpFigures[i].p50, p50[i])
			httpFigures[i].p95 = append(httpFigures[i].p95, p95[i])
		}
	}
	const w = "8 console"
	for i, p := range pages {
		b.rep.add(&Row{Workload: w, Metric: fmt.Sprintf("list page, %s: p50", p.label), Unit: UnitDuration, Argo: newStat(totals[i].p50),
			Note: fmt.Sprintf("List 50 + CountUpTo 10000, %s; List p50 %s, count p50 %s", label, UnitDuration.format(newStat(lists[i].p50).Median), UnitDuration.format(newStat(counts[i].p50).Median))})
		r := b.rep.add(&Row{Workload: w, Metric: fmt.Sprintf("list page, %s: p95", p.label), Unit: UnitDuration, Argo: newStat(totals[i].p95), Target: "≤200ms",
			Note: fmt.Sprintf("List p95 %s, count p95 %s", UnitDuration.format(newStat(lists[i].p95).Median), UnitDuration.format(newStat(counts[i].p95).Median))})
		r.Met = metIf(r.Argo.Median <= 0.2)
		f, err := storageFilter(p.f)
		if err != nil {
			return err
		}
		f.Limit = 50
		q, args, err := st.ListQuery(ctx, f)
		if err != nil {
			return err
		}
		if err := b.explain(ctx, "argo", label+", list "+p.label, q, args); err != nil {
			return err
		}
		if q, args, err = st.CountUpToQuery(ctx, f, 10000); err != nil {
			return err
		}
		if err := b.explain(ctx, "argo", label+", count "+p.label, q, args); err != nil {
			return err
		}
	}
	b.rep.add(&Row{Workload: w, Metric: "overview, last 24h in 5m buckets: p50", Unit: UnitDuration, Argo: newStat(overview.p50), Note: label})
	r := b.rep.add(&Row{Workload: w, Metric: "overview, last 24h in 5m buckets: p95", Unit: UnitDuration, Argo: newStat(overview.p95), Target: "≤200ms"})
	r.Met = metIf(r.Argo.Median <= 0.2)
	for i, p := range httpPages {
		b.rep.add(&Row{Workload: w, Metric: fmt.Sprintf("console page, %s: p50", p.label), Unit: UnitDuration, Argo: newStat(httpFigures[i].p50),
			Note: "full HTTP GET of console.New's handler on loopback, " + label})
		r := b.rep.add(&Row{Workload: w, Metric: fmt.Sprintf("console page, %s: p95", p.label), Unit: UnitDuration, Argo: newStat(httpFigures[i].p95), Target: "≤200ms"})
		r.Met = metIf(r.Argo.Median <= 0.2)
	}
	return b.reset(ctx)
}

// consoleLoad inserts n rows (consoleRow) with multi-row INSERTs of literal
// values, 1,000 rows a statement, 20 statements a transaction, and the
// attempt rows their failures left: one per failed attempt, each followed
// by a 1 s backoff. The bench is the only writer: the ids a statement wrote
// are those above the largest id before it.
func (b *bencher) consoleLoad(ctx context.Context, n int) error {
	const perStmt, perTx = 1000, 20
	taskHead := "INSERT INTO argo_task (task_id, task_status, execute_times, max_attempts, execute_time, task_parameter, error_msg, fallback_error_msg, discard_reason, shard_key, retry_policy, unique_key, tenant, attempt_started_at, gmt_create, gmt_modified) VALUES "
	attemptHead := "INSERT INTO argo_task_attempt (task_pk, attempt, kind, worker, started_at, finished_at, outcome, error_msg, backoff_ms) VALUES "
	now := time.Now().UnixMilli()
	var last int64
	if err := b.admin.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM argo_task").Scan(&last); err != nil {
		return err
	}
	var tasks, attempts strings.Builder
	done := 0
	for done < n {
		tx, err := b.admin.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for s := 0; s < perTx && done < n; s++ {
			tasks.Reset()
			tasks.WriteString(taskHead)
			from := done
			for r := 0; r < perStmt && done < n; r++ {
				state, tries, due, modified := consoleRow(done, n, now)
				errText, key, started := "", "NULL", int64(0)
				if tries > 0 {
					started = modified - 50
				}
				if state == int(runtime.StateDead) || state == int(runtime.StateRetrying) {
					errText = fmt.Sprintf("dial tcp 10.0.%d.%d:443: connection refused", done%7, done%250)
				}
				if done%3 == 0 {
					key = fmt.Sprintf("'k-%d'", done)
				}
				if r > 0 {
					tasks.WriteString(", ")
				}
				fmt.Fprintf(&tasks, "(%s, %d, %d, 3, %d, '{\"n\":%d}', %s, '', '', %d, '', %s, 't%d', %d, %d, %d)",
					quote(consoleNames[done%len(consoleNames)]), state, tries, due, done, quote(errText), done%64, key, done%10, started, modified-1000, modified)
				done++
			}
			if _, err := tx.ExecContext(ctx, tasks.String()); err != nil {
				tx.Rollback()
				return err
			}
			ids, err := consoleNewIDs(ctx, tx, last, done-from)
			if err != nil {
				tx.Rollback()
				return err
			}
			last = ids[len(ids)-1]
			attempts.Reset()
			for i := from; i < done; i++ {
				state, tries, _, modified := consoleRow(i, n, now)
				failures := tries - 1 // the last attempt succeeded
				if state == int(runtime.StateDead) || state == int(runtime.StateRetrying) {
					failures = tries
				}
				for a := 1; a <= failures; a++ {
					if attempts.Len() == 0 {
						attempts.WriteString(attemptHead)
					} else {
						attempts.WriteString(", ")
					}
					end := modified - int64(failures-a+1)*1500
					fmt.Fprintf(&attempts, "(%d, %d, 'attempt', 'bench', %d, %d, 'failed', 'connection refused', 1000)", ids[i-from], a, end-100, end)
				}
			}
			if attempts.Len() > 0 {
				if _, err := tx.ExecContext(ctx, attempts.String()); err != nil {
					tx.Rollback()
					return err
				}
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// consoleNewIDs reads the ids of the want rows a statement just wrote (the
// ids above after), in order.
func consoleNewIDs(ctx context.Context, tx *sql.Tx, after int64, want int) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, "SELECT id FROM argo_task WHERE id > ? ORDER BY id", after)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(ids) != want {
		return nil, fmt.Errorf("the INSERT of %d rows left %d rows after id %d: another writer uses the bench's database", want, len(ids), after)
	}
	return ids, nil
}

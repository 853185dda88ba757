package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/argo-retry/argo/cmd/argobench/benchtask"
	"github.com/argo-retry/argo/runtime"
)

type bencher struct {
	o       *options
	dsn     string
	dialect string
	admin   *sql.DB // resets, checks, bulk loads, EXPLAIN
	hand    *sql.DB // the hand-written side (runtime.OpenDB: argo's connection settings)
	log     io.Writer
	logger  *slog.Logger
	rep     *Report
}

func (b *bencher) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "argobench: "+format+"\n", args...)
}

func (b *bencher) reset(ctx context.Context) error { return resetTables(ctx, b.admin, b.dialect) }

// startArgo starts a runtime on cfg (the bench's DSN unless cfg.DB is set)
// with the generated package registered.
func (b *bencher) startArgo(ctx context.Context, cfg runtime.Config) (*runtime.Runtime, error) {
	if cfg.DB == nil {
		cfg.DSN = b.dsn
	}
	cfg.AutoMigrate = true
	cfg.Logger = b.logger
	if cfg.Workers == 0 {
		cfg.Workers = b.o.workers
	}
	rt, err := runtime.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := benchtask.ArgoRegister(rt); err != nil {
		stopArgo(rt)
		return nil, err
	}
	return rt, nil
}

func stopArgo(rt *runtime.Runtime) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = rt.Stop(ctx)
}

// eachRun runs the argo and hand-written sides -runs times on emptied
// tables, alternating which goes first. hand may be nil.
func (b *bencher) eachRun(ctx context.Context, name string, argo, hand func(ctx context.Context) error) error {
	type side struct {
		name string
		fn   func(context.Context) error
	}
	sides := []side{{"argo", argo}}
	if hand != nil {
		sides = append(sides, side{"hand-written", hand})
	}
	for r := range b.o.runs {
		order := sides
		if r%2 == 1 && len(sides) == 2 {
			order = []side{sides[1], sides[0]}
		}
		for _, s := range order {
			if err := b.reset(ctx); err != nil {
				return err
			}
			rctx, cancel := context.WithTimeout(ctx, b.o.timeout)
			start := time.Now()
			err := s.fn(rctx)
			cancel()
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", s.name, r+1, err)
			}
			b.logf("%s: %s run %d/%d took %s", name, s.name, r+1, b.o.runs, time.Since(start).Round(time.Millisecond))
		}
	}
	return nil
}

// parallel calls fn(i) for i in [0, n) from g goroutines; it stops at the first error.
func parallel(ctx context.Context, g, n int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	var failed atomic.Bool
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() && ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					failed.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// doneObserver signals when n tasks of one name have succeeded (the outcome
// write has landed: the runtime reports Finished after it).
type doneObserver struct {
	name   string
	target int64
	n      atomic.Int64
	done   chan struct{}
	at     atomic.Int64 // UnixNano of the target-th success
}

func newDoneObserver(name string, n int) *doneObserver {
	return &doneObserver{name: name, target: int64(n), done: make(chan struct{})}
}

func (d *doneObserver) Finished(task string, st runtime.State) {
	if task == d.name && st == runtime.StateSucceeded {
		if d.n.Add(1) == d.target {
			d.at.Store(time.Now().UnixNano())
			close(d.done)
		}
	}
}
func (d *doneObserver) Submitted(string)                                                 {}
func (d *doneObserver) AttemptDone(string, string, string, time.Duration, time.Duration) {}
func (d *doneObserver) AlertFired(string)                                                {}
func (d *doneObserver) LeaseRescued(string)                                              {}
func (d *doneObserver) ClaimError(error)                                                 {}

func (d *doneObserver) wait(ctx context.Context) error {
	select {
	case <-d.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %d of %d tasks succeeded", errTimeout, d.n.Load(), d.target)
	}
}

// execCounter counts executions per task id.
type execCounter struct {
	mu sync.Mutex
	m  map[int64]int
}

func newExecCounter(n int) *execCounter { return &execCounter{m: make(map[int64]int, n)} }

func (c *execCounter) add(id int64) {
	c.mu.Lock()
	c.m[id]++
	c.mu.Unlock()
}

// check reports whether n distinct tasks ran exactly once each.
func (c *execCounter) check(n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	dup := 0
	for _, k := range c.m {
		if k != 1 {
			dup++
		}
	}
	if len(c.m) != n || dup != 0 {
		return fmt.Errorf("exactly-once violated: %d distinct tasks ran (want %d), %d ran more than once", len(c.m), n, dup)
	}
	return nil
}

func secs(d time.Duration) float64 { return d.Seconds() }

func call(f func()) {
	if f != nil {
		f()
	}
}

// ---------------------------------------------------------------- 1. sync call

func (b *bencher) syncCall(ctx context.Context) error {
	n := b.o.n(5000, 20)
	var a50, a99, h50, h99 []float64
	record := func(lat []time.Duration, p50, p99 *[]float64) {
		s := sortedDurations(lat)
		*p50 = append(*p50, secs(percentile(s, 50)))
		*p99 = append(*p99, secs(percentile(s, 99)))
	}
	err := b.eachRun(ctx, "sync",
		func(ctx context.Context) error {
			rt, err := b.startArgo(ctx, runtime.Config{})
			if err != nil {
				return err
			}
			defer stopArgo(rt)
			lat, err := b.argoSync(ctx, n)
			if err != nil {
				return err
			}
			record(lat, &a50, &a99)
			return b.expectSucceeded(ctx, "argobench.SyncCall", n+warmup(n))
		},
		func(ctx context.Context) error {
			lat, err := b.handSync(ctx, b.hand, n)
			if err != nil {
				return err
			}
			record(lat, &h50, &h99)
			return b.expectSucceeded(ctx, "argobench.SyncCall", n+warmup(n))
		})
	if err != nil {
		return err
	}
	r := b.rep.add(&Row{Workload: "1 sync call", Metric: fmt.Sprintf("p50 per call (%d calls)", n), Unit: UnitDuration, Argo: newStat(a50), Hand: newStat(h50), Target: "≤1.2×"})
	r.Met = metIf(r.Ratio != nil && *r.Ratio <= 1.2)
	b.rep.add(&Row{Workload: "1 sync call", Metric: "p99 per call", Unit: UnitDuration, Argo: newStat(a99), Hand: newStat(h99)})
	return nil
}

func warmup(n int) int { return min(50, n/10+1) }

func metIf(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

func (b *bencher) expectSucceeded(ctx context.Context, name string, want int) error {
	got, err := countWhere(ctx, b.admin, "task_id = ? AND task_status = 3", name)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%d %s rows succeeded, want %d", got, name, want)
	}
	return nil
}

// argoSync calls the generated sync wrapper n times (after a warm-up) on
// the bound runtime and returns the latency of each call.
func (b *bencher) argoSync(ctx context.Context, n int) ([]time.Duration, error) {
	benchtask.SetHooks(benchtask.Hooks{})
	for i := range warmup(n) {
		if err := benchtask.SyncCallDurable(ctx, -1-i); err != nil {
			return nil, err
		}
	}
	lat := make([]time.Duration, n)
	for i := range n {
		t0 := time.Now()
		err := benchtask.SyncCallDurable(ctx, i)
		lat[i] = time.Since(t0)
		if err != nil {
			return nil, err
		}
	}
	return lat, nil
}

const handOwner = "argobench-hand"

// handSync is the hand-written sync call: INSERT the row (leased, as argo
// writes a sync call), run the function, UPDATE it done.
func (b *bencher) handSync(ctx context.Context, db *sql.DB, n int) ([]time.Duration, error) {
	benchtask.SetHooks(benchtask.Hooks{})
	def, _, _, _ := benchtask.Defs()
	row := newHandRow(def)
	one := func(i int) error {
		now := time.Now()
		res, err := db.ExecContext(ctx, b.insertSQL(), row.values(argsJSON(i), now, stateRunning, 1, now, handOwner, now.Add(30*time.Second).UnixMilli())...)
		if err != nil {
			return err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if err := benchtask.SyncCall(ctx, i); err != nil {
			return err
		}
		_, err = db.ExecContext(ctx, "UPDATE argo_task SET task_status = 3, lease_owner = '', lease_until = 0, gmt_modified = ? WHERE id = ?", time.Now().UnixMilli(), id)
		return err
	}
	for i := range warmup(n) {
		if err := one(-1 - i); err != nil {
			return nil, err
		}
	}
	lat := make([]time.Duration, n)
	for i := range n {
		t0 := time.Now()
		err := one(i)
		lat[i] = time.Since(t0)
		if err != nil {
			return nil, err
		}
	}
	return lat, nil
}

// ---------------------------------------------------------------- 2. insert

func (b *bencher) insert(ctx context.Context) error {
	n := b.o.n(50000, 20)
	var argoRates, handRates []float64
	err := b.eachRun(ctx, "insert",
		func(ctx context.Context) error {
			rt, err := b.startArgo(ctx, runtime.Config{})
			if err != nil {
				return err
			}
			defer stopArgo(rt)
			el, err := b.argoInsert(ctx, n)
			if err != nil {
				return err
			}
			argoRates = append(argoRates, float64(n)/secs(el))
			return b.expectCount(ctx, "argobench.Later", statePending, n)
		},
		func(ctx context.Context) error {
			el, err := b.handInsert(ctx, b.hand, n)
			if err != nil {
				return err
			}
			handRates = append(handRates, float64(n)/secs(el))
			return b.expectCount(ctx, "argobench.Later", statePending, n)
		})
	if err != nil {
		return err
	}
	r := b.rep.add(&Row{Workload: "2 insert", Metric: fmt.Sprintf("submits/s (%d from %d goroutines)", n, b.o.submitters), Unit: UnitRate, Argo: newStat(argoRates), Hand: newStat(handRates), Target: "≥0.9×"})
	r.Met = metIf(r.Ratio != nil && *r.Ratio >= 0.9)
	return nil
}

func (b *bencher) expectCount(ctx context.Context, name string, state, want int) error {
	got, err := countWhere(ctx, b.admin, "task_id = ? AND task_status = ?", name, state)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%d %s rows in state %d, want %d", got, name, state, want)
	}
	return nil
}

func (b *bencher) argoInsert(ctx context.Context, n int) (time.Duration, error) {
	t0 := time.Now()
	err := parallel(ctx, b.o.submitters, n, func(i int) error { return benchtask.LaterDurable(ctx, i) })
	return time.Since(t0), err
}

func (b *bencher) handInsert(ctx context.Context, db *sql.DB, n int) (time.Duration, error) {
	_, later, _, _ := benchtask.Defs()
	row := newHandRow(later)
	t0 := time.Now()
	err := parallel(ctx, b.o.submitters, n, func(i int) error {
		now := time.Now()
		_, err := db.ExecContext(ctx, b.insertSQL(), row.values(argsJSON(i), now, statePending, 0, now.Add(later.Delay), "", 0)...)
		return err
	})
	return time.Since(t0), err
}

// ---------------------------------------------------------------- 3. insert + work

func (b *bencher) insertWork(ctx context.Context) error {
	n := b.o.n(50000, 20)
	var argoRates, handRates []float64
	err := b.eachRun(ctx, "work",
		func(ctx context.Context) error {
			el, err := b.argoWork(ctx, runtime.Config{}, n, nil, nil)
			if err != nil {
				return err
			}
			argoRates = append(argoRates, float64(n)/secs(el))
			return b.expectSucceeded(ctx, "argobench.Work", n)
		},
		func(ctx context.Context) error {
			el, err := b.handWork(ctx, b.hand, n)
			if err != nil {
				return err
			}
			handRates = append(handRates, float64(n)/secs(el))
			return b.expectSucceeded(ctx, "argobench.Work", n)
		})
	if err != nil {
		return err
	}
	r := b.rep.add(&Row{Workload: "3 insert + work", Metric: fmt.Sprintf("tasks/s end to end (%d)", n), Unit: UnitRate, Argo: newStat(argoRates), Hand: newStat(handRates), Target: "≥1.5×",
		Note: "every task ran exactly once (checked, both sides)"})
	r.Met = metIf(r.Ratio != nil && *r.Ratio >= 1.5)
	return nil
}

// argoWork submits n Work calls from the submitting goroutines while the
// runtime started on cfg works them, and returns the time from the first
// submit to the n-th success recorded.
//
// begin and end, if set, are called when the measured part begins and ends.
func (b *bencher) argoWork(ctx context.Context, cfg runtime.Config, n int, begin, end func()) (time.Duration, error) {
	counts := newExecCounter(n)
	benchtask.SetHooks(benchtask.Hooks{Work: func(ctx context.Context, _ int) {
		id, _, _ := runtime.AttemptFrom(ctx)
		counts.add(id)
	}})
	obs := newDoneObserver("argobench.Work", n)
	cfg.Observer = obs
	rt, err := b.startArgo(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer stopArgo(rt)
	call(begin)
	t0 := time.Now()
	if err := parallel(ctx, b.o.submitters, n, func(i int) error { return benchtask.WorkDurable(ctx, i) }); err != nil {
		return 0, err
	}
	if err := obs.wait(ctx); err != nil {
		return 0, err
	}
	call(end)
	el := time.Duration(obs.at.Load() - t0.UnixNano())
	time.Sleep(50 * time.Millisecond) // a duplicate execution would show up here
	return el, counts.check(n)
}

// handWork is the hand-written queue: the submitting goroutines INSERT
// pending rows while -workers goroutines claim up to -handbatch due rows at
// a time, run them, and UPDATE each done.
func (b *bencher) handWork(ctx context.Context, db *sql.DB, n int) (time.Duration, error) {
	benchtask.SetHooks(benchtask.Hooks{})
	_, _, work, _ := benchtask.Defs()
	row := newHandRow(work)
	counts := newExecCounter(n)
	var completed atomic.Int64
	var endAt atomic.Int64
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t0 := time.Now()
	var wg sync.WaitGroup
	errc := make(chan error, b.o.workers+1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := parallel(ctx, b.o.submitters, n, func(i int) error {
			now := time.Now()
			_, err := db.ExecContext(ctx, b.insertSQL(), row.values(argsJSON(i), now, statePending, 0, now, "", 0)...)
			return err
		})
		if err != nil {
			errc <- err
			cancel()
		}
	}()
	for range b.o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			idle := time.Millisecond
			for completed.Load() < int64(n) && ctx.Err() == nil {
				tasks, err := b.handClaim(ctx, db, b.o.handBatch)
				if err != nil {
					if ctx.Err() == nil {
						errc <- err
						cancel()
					}
					return
				}
				if len(tasks) == 0 {
					time.Sleep(idle)
					idle = min(2*idle, 50*time.Millisecond)
					continue
				}
				idle = time.Millisecond
				for _, t := range tasks {
					var args struct {
						N int `json:"n"`
					}
					if err := json.Unmarshal(t.args, &args); err != nil {
						errc <- err
						cancel()
						return
					}
					if err := benchtask.Work(ctx, args.N); err != nil {
						errc <- err
						cancel()
						return
					}
					counts.add(t.id)
					if _, err := db.ExecContext(ctx, "UPDATE argo_task SET task_status = 3, lease_owner = '', lease_until = 0, gmt_modified = ? WHERE id = ?", time.Now().UnixMilli(), t.id); err != nil {
						if ctx.Err() == nil {
							errc <- err
							cancel()
						}
						return
					}
					if completed.Add(1) == int64(n) {
						endAt.Store(time.Now().UnixNano())
					}
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return 0, err
	default:
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("%w: %d of %d tasks done", errTimeout, completed.Load(), n)
	}
	return time.Duration(endAt.Load() - t0.UnixNano()), counts.check(n)
}

type claimed struct {
	id   int64
	args []byte
}

// handClaim leases up to limit due pending rows. SQLite: one UPDATE …
// RETURNING in a BEGIN IMMEDIATE transaction. MySQL: what argo's claim
// does, written by hand (see handClaimMySQL).
func (b *bencher) handClaim(ctx context.Context, db *sql.DB, limit int) ([]claimed, error) {
	now := time.Now().UnixMilli()
	lease := time.Now().Add(30 * time.Second).UnixMilli()
	if b.dialect == runtime.DialectSQLite {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		defer tx.Rollback()
		rows, err := tx.QueryContext(ctx, handClaimSQLite, handOwner, lease, now, now, limit)
		if err != nil {
			return nil, err
		}
		out, err := scanClaimed(rows)
		if err != nil {
			return nil, err
		}
		return out, tx.Commit()
	}
	var won []claimed
	for round := 0; round < handClaimRounds && len(won) < limit; round++ {
		want := limit - len(won)
		var took []claimed
		var read int
		var err error
		for try := 1; ; try++ {
			took, read, err = b.handClaimMySQL(ctx, db, want, now, lease)
			if err == nil || try == 5 || !isLockError(err) {
				break
			}
		}
		if err != nil {
			return won, err
		}
		won = append(won, took...)
		if len(took) == read || read < want {
			break // nothing lost to another claimer, or no more due rows
		}
	}
	return won, nil
}

// handClaimRounds bounds the candidate reads of one hand-written claim, as
// argo's claimRounds does: a claimer that lost candidates to another reads
// again for the rest of its limit.
const handClaimRounds = 3

// handClaimSeq makes each hand-written claim's lease owner unique.
var handClaimSeq atomic.Int64

// handClaimMySQL is one round of the hand-written MySQL claim: a plain
// SELECT of up to limit due rows (no lock), then one autocommit UPDATE of
// those ids that changes only rows still pending, setting a lease owner
// unique to this claim. If it changed every row read, they are all this
// claim's (two round trips); otherwise another claimer took some meanwhile,
// and a SELECT by that owner says which this claim got. It returns the rows
// taken and how many were read.
func (b *bencher) handClaimMySQL(ctx context.Context, db *sql.DB, limit int, now, lease int64) ([]claimed, int, error) {
	rows, err := db.QueryContext(ctx, handClaimReadMySQL, now, limit)
	if err != nil {
		return nil, 0, err
	}
	read, err := scanClaimed(rows)
	if err != nil || len(read) == 0 {
		return nil, 0, err
	}
	ids := make([]any, len(read))
	for i, c := range read {
		ids[i] = c.id
	}
	owner := fmt.Sprintf("%s-%d", handOwner, handClaimSeq.Add(1))
	q := "UPDATE argo_task SET task_status = 1, execute_times = execute_times + 1, lease_owner = ?, lease_until = ?, gmt_modified = ? WHERE id IN (" + placeholders(len(ids)) + ") AND task_status = 0"
	res, err := db.ExecContext(ctx, q, append([]any{owner, lease, now}, ids...)...)
	if err != nil {
		return nil, 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, 0, err
	}
	if n == int64(len(read)) {
		return read, len(read), nil
	}
	rows, err = db.QueryContext(ctx, "SELECT id, task_parameter FROM argo_task WHERE id IN ("+placeholders(len(ids))+") AND lease_owner = ?", append(ids, owner)...)
	if err != nil {
		return nil, 0, err
	}
	took, err := scanClaimed(rows)
	return took, len(read), err
}

func scanClaimed(rows *sql.Rows) ([]claimed, error) {
	defer rows.Close()
	var out []claimed
	for rows.Next() {
		var c claimed
		if err := rows.Scan(&c.id, &c.args); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// isLockError reports a MySQL deadlock (1213) or lock-wait timeout (1205).
func isLockError(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Error 1213") || strings.Contains(s, "Error 1205")
}

// ---------------------------------------------------------------- 4. retry precision

func (b *bencher) retry(ctx context.Context) error {
	n := b.o.n(2000, 20)
	variants := []struct {
		label string
		rate  float64
	}{{"burst", 0}}
	if b.o.retryRate > 0 {
		variants = append(variants, struct {
			label string
			rate  float64
		}{fmt.Sprintf("paced %.0f/s", b.o.retryRate), b.o.retryRate})
	}
	for _, v := range variants {
		var p50, p99, pmax []float64
		err := b.eachRun(ctx, "retry "+v.label, func(ctx context.Context) error {
			late, err := b.argoRetry(ctx, runtime.Config{}, n, v.rate, nil, nil)
			if err != nil {
				return err
			}
			s := sortedDurations(late)
			p50 = append(p50, secs(percentile(s, 50)))
			p99 = append(p99, secs(percentile(s, 99)))
			pmax = append(pmax, secs(s[len(s)-1]))
			return nil
		}, nil)
		if err != nil {
			return err
		}
		how := "submitted as fast as 8 goroutines can"
		if v.rate > 0 {
			how = fmt.Sprintf("submitted at %.0f/s", v.rate)
		}
		b.rep.add(&Row{Workload: "4 retry precision", Metric: fmt.Sprintf("%s: lateness p50", v.label), Unit: UnitDuration, Argo: newStat(p50), Note: fmt.Sprintf("%d tasks %s; retry due 1s after the first attempt fails", n, how)})
		r := b.rep.add(&Row{Workload: "4 retry precision", Metric: fmt.Sprintf("%s: lateness p99", v.label), Unit: UnitDuration, Argo: newStat(p99), Target: "≤10ms"})
		r.Met = metIf(r.Argo.Median <= 0.010)
		b.rep.add(&Row{Workload: "4 retry precision", Metric: fmt.Sprintf("%s: lateness max", v.label), Unit: UnitDuration, Argo: newStat(pmax)})
	}
	return nil
}

// argoRetry submits n FailOnce calls whose first attempt fails; it returns,
// per task, how late the second attempt started against first failure + 1s.
// With rate > 0 the calls are spread evenly at rate per second.
func (b *bencher) argoRetry(ctx context.Context, cfg runtime.Config, n int, rate float64, begin, end func()) ([]time.Duration, error) {
	failed := make([]atomic.Int64, n)
	started := make([]atomic.Int64, n)
	benchtask.SetHooks(benchtask.Hooks{FailOnce: func(ctx context.Context, i int) error {
		now := time.Now().UnixNano()
		if _, attempt, _ := runtime.AttemptFrom(ctx); attempt <= 1 {
			failed[i].Store(now)
			return errors.New("argobench: the first attempt fails")
		}
		started[i].Store(now)
		return nil
	}})
	obs := newDoneObserver("argobench.FailOnce", n)
	cfg.Observer = obs
	rt, err := b.startArgo(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer stopArgo(rt)
	call(begin)
	t0 := time.Now()
	err = parallel(ctx, b.o.submitters, n, func(i int) error {
		if rate > 0 {
			time.Sleep(time.Until(t0.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
		}
		return benchtask.FailOnceDurable(ctx, i)
	})
	if err != nil {
		return nil, err
	}
	if err := obs.wait(ctx); err != nil {
		return nil, err
	}
	call(end)
	late := make([]time.Duration, n)
	for i := range n {
		f, s := failed[i].Load(), started[i].Load()
		if f == 0 || s == 0 {
			return nil, fmt.Errorf("task %d: first attempt at %d, second at %d", i, f, s)
		}
		late[i] = time.Duration(s - (f + int64(time.Second)))
	}
	return late, nil
}

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/argo-retry/argo/cmd/argobench/benchtask"
)

// The what-if workload measures, by hand, the batching the issue proposes
// for the runtime, so the report can say what it would buy on this machine
// and database: concurrent submits grouped into multi-row INSERTs by one
// writer (each caller still waits for its row's commit), and completions
// written one UPDATE per claimed batch.

// groupWriter turns concurrent single-row inserts into multi-row INSERTs.
type groupWriter struct {
	db   *sql.DB
	ch   chan *groupReq
	max  int
	done chan struct{}
	rows atomic.Int64
	stmt atomic.Int64
}

type groupReq struct {
	vals []any
	err  chan error
}

func newGroupWriter(db *sql.DB, maxRows int) *groupWriter {
	g := &groupWriter{db: db, ch: make(chan *groupReq, 1024), max: maxRows, done: make(chan struct{})}
	go g.loop()
	return g
}

func (g *groupWriter) insert(ctx context.Context, vals []any) error {
	r := &groupReq{vals: vals, err: make(chan error, 1)}
	select {
	case g.ch <- r:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.err:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *groupWriter) close() { close(g.ch); <-g.done }

func (g *groupWriter) loop() {
	defer close(g.done)
	head, values, _ := strings.Cut(insertTaskSQL, " VALUES ")
	for r := range g.ch {
		batch := []*groupReq{r}
	drain:
		for len(batch) < g.max {
			select {
			case r, ok := <-g.ch:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		var sb strings.Builder
		sb.WriteString(head)
		sb.WriteString(" VALUES ")
		var args []any
		for i, r := range batch {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(values)
			args = append(args, r.vals...)
		}
		_, err := g.db.ExecContext(context.Background(), sb.String(), args...)
		g.rows.Add(int64(len(batch)))
		g.stmt.Add(1)
		for _, r := range batch {
			r.err <- err
		}
	}
}

func (b *bencher) whatIf(ctx context.Context) error {
	n := b.o.n(50000, 20)
	_, later, work, _ := benchtask.Defs()
	var insRates, workRates, insBatch, mutexRates []float64
	sqlite := b.dialect == "sqlite"
	err := b.eachRun(ctx, "whatif", func(ctx context.Context) error {
		g := newGroupWriter(b.hand, 100)
		row := newHandRow(later)
		t0 := time.Now()
		err := parallel(ctx, b.o.submitters, n, func(i int) error {
			now := time.Now()
			return g.insert(ctx, row.values(argsJSON(i), now, statePending, 0, now.Add(later.Delay), "", 0))
		})
		el := time.Since(t0)
		g.close()
		if err != nil {
			return err
		}
		insRates = append(insRates, float64(n)/el.Seconds())
		insBatch = append(insBatch, float64(g.rows.Load())/float64(g.stmt.Load()))
		if err := b.expectCount(ctx, "argobench.Later", statePending, n); err != nil {
			return err
		}
		if err := b.reset(ctx); err != nil {
			return err
		}
		if sqlite {
			// SQLite has one writer at a time; contending connections wait in
			// its busy handler, which sleeps 1, 2, 5, 10… ms. A Go mutex
			// hands the lock over without sleeping.
			var mu sync.Mutex
			t0 := time.Now()
			err := parallel(ctx, b.o.submitters, n, func(i int) error {
				now := time.Now()
				vals := row.values(argsJSON(i), now, statePending, 0, now.Add(later.Delay), "", 0)
				mu.Lock()
				defer mu.Unlock()
				_, err := b.hand.ExecContext(ctx, insertTaskSQL, vals...)
				return err
			})
			if err != nil {
				return err
			}
			mutexRates = append(mutexRates, float64(n)/time.Since(t0).Seconds())
			if err := b.reset(ctx); err != nil {
				return err
			}
		}
		el, err = b.batchedWork(ctx, newHandRow(work), n)
		if err != nil {
			return err
		}
		workRates = append(workRates, float64(n)/el.Seconds())
		return b.expectSucceeded(ctx, "argobench.Work", n)
	}, nil)
	if err != nil {
		return err
	}
	b.rep.WhatIf = append(b.rep.WhatIf,
		&Row{Workload: "2 insert", Metric: fmt.Sprintf("grouped: one writer, multi-row INSERT of waiting calls (%.1f rows/statement)", newStat(insBatch).Median), Unit: UnitRate, Argo: newStat(insRates)},
		&Row{Workload: "3 insert + work", Metric: fmt.Sprintf("grouped inserts + one UPDATE per claimed batch of %d", b.o.handBatch), Unit: UnitRate, Argo: newStat(workRates)},
	)
	if sqlite {
		b.rep.WhatIf = append(b.rep.WhatIf, &Row{Workload: "2 insert", Metric: "one INSERT per call, writers serialized by a Go mutex (no busy-handler sleeps)", Unit: UnitRate, Argo: newStat(mutexRates)})
	}
	return nil
}

// batchedWork is handWork with grouped inserts and one completion UPDATE
// per claimed batch.
func (b *bencher) batchedWork(ctx context.Context, row *handRow, n int) (time.Duration, error) {
	benchtask.SetHooks(benchtask.Hooks{})
	counts := newExecCounter(n)
	g := newGroupWriter(b.hand, 100)
	defer g.close()
	var completed, endAt atomic.Int64
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, b.o.workers+1)
	fail := func(err error) {
		if ctx.Err() == nil {
			errc <- err
			cancel()
		}
	}
	t0 := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := parallel(ctx, b.o.submitters, n, func(i int) error {
			now := time.Now()
			return g.insert(ctx, row.values(argsJSON(i), now, statePending, 0, now, "", 0))
		}); err != nil {
			fail(err)
		}
	}()
	for range b.o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			idle := time.Millisecond
			for completed.Load() < int64(n) && ctx.Err() == nil {
				tasks, err := b.handClaim(ctx, b.hand, b.o.handBatch)
				if err != nil {
					fail(err)
					return
				}
				if len(tasks) == 0 {
					time.Sleep(idle)
					idle = min(2*idle, 50*time.Millisecond)
					continue
				}
				idle = time.Millisecond
				ids := make([]any, 0, len(tasks))
				for _, t := range tasks {
					var args struct {
						N int `json:"n"`
					}
					if err := json.Unmarshal(t.args, &args); err != nil {
						fail(err)
						return
					}
					if err := benchtask.Work(ctx, args.N); err != nil {
						fail(err)
						return
					}
					counts.add(t.id)
					ids = append(ids, t.id)
				}
				if _, err := b.hand.ExecContext(ctx, "UPDATE argo_task SET task_status = 3, lease_owner = '', lease_until = 0, gmt_modified = ? WHERE id IN ("+placeholders(len(ids))+")", append([]any{time.Now().UnixMilli()}, ids...)...); err != nil {
					fail(err)
					return
				}
				if completed.Add(int64(len(ids))) == int64(n) {
					endAt.Store(time.Now().UnixNano())
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

package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/argo-retry/argo/cmd/argobench/benchtask"
)

// The what-if workload measures, by hand, batching the runtime does not do
// yet, so the report can say what it would buy on this machine and
// database: concurrent submits grouped into multi-row INSERTs by one writer
// (each caller still waits for its row's commit).

// groupWriter turns concurrent single-row inserts into multi-row INSERTs.
type groupWriter struct {
	db        *sql.DB
	insertSQL string // the single-row INSERT whose VALUES tuple each row repeats
	ch        chan *groupReq
	max       int
	done      chan struct{}
	rows      atomic.Int64
	stmt      atomic.Int64
}

type groupReq struct {
	vals []any
	err  chan error
}

func newGroupWriter(db *sql.DB, insertSQL string, maxRows int) *groupWriter {
	g := &groupWriter{db: db, insertSQL: insertSQL, ch: make(chan *groupReq, 1024), max: maxRows, done: make(chan struct{})}
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
	head, values, _ := strings.Cut(g.insertSQL, " VALUES ")
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
	_, later, _, _ := benchtask.Defs()
	var insRates, insBatch []float64
	err := b.eachRun(ctx, "whatif", func(ctx context.Context) error {
		g := newGroupWriter(b.hand, b.insertSQL(), 100)
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
		return nil
	}, nil)
	if err != nil {
		return err
	}
	b.rep.WhatIf = append(b.rep.WhatIf,
		&Row{Workload: "2 insert", Metric: fmt.Sprintf("grouped: one writer, multi-row INSERT of waiting calls (%.1f rows/statement)", newStat(insBatch).Median), Unit: UnitRate, Argo: newStat(insRates)},
	)
	return nil
}

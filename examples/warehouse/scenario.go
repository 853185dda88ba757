package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/argo-retry/argo/examples/warehouse/downstream"
	"github.com/argo-retry/argo/examples/warehouse/integration"
	"github.com/argo-retry/argo/runtime"
)

type options struct {
	DSN      string
	DBPath   string
	Orders   int
	FailRate float64
	Seed     uint64
	Timeout  time.Duration
	Verbose  bool
	Logger   *slog.Logger
}

// run plays the scenario and returns its summary.
func run(ctx context.Context, o options, out io.Writer) (*Summary, error) {
	down, err := downstream.Start(o.Seed, o.FailRate)
	if err != nil {
		return nil, err
	}
	defer down.Close()

	alerts := &alertCounter{n: map[string]int{}}
	rt, err := runtime.Start(ctx, runtime.Config{
		DSN: o.DSN, AutoMigrate: true, Workers: 16,
		PollInterval: 100 * time.Millisecond, LeaseDuration: 10 * time.Second,
		Observer: alerts, Logger: o.Logger,
	})
	if err != nil {
		return nil, err
	}
	defer rt.Stop(context.Background())

	sys := &integration.Systems{Dispatch: down.Dispatch, Lights: down.Lights, Printer: down.Printer, Upstream: down.Upstream,
		Client: &http.Client{Timeout: 5 * time.Second}}
	if err := integration.ArgoRegisterSystems(rt, sys); err != nil {
		return nil, err
	}
	if _, err := rt.DB().ExecContext(ctx, "CREATE TABLE IF NOT EXISTS wh_order (id VARCHAR(64) NOT NULL PRIMARY KEY, status VARCHAR(32) NOT NULL)"); err != nil {
		return nil, err
	}
	// A database shared with earlier runs (-db, -dsn) keeps its rows: the
	// summary counts only this run's tasks.
	var firstID int64
	if err := rt.DB().QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM argo_task").Scan(&firstID); err != nil {
		return nil, err
	}
	runID := time.Now().UnixNano() % 1e6

	fmt.Fprintf(out, "warehouse: %d orders, %.0f%% of downstream calls fail (seed %d), database %s\n\n", o.Orders, o.FailRate*100, o.Seed, rt.Dialect())
	syncFailures := 0
	for i := range o.Orders {
		order := integration.OrderID(fmt.Sprintf("SO-%d-%03d", runID, i+1))
		slot := integration.Slot{Wall: "W" + string(rune('A'+i%4)), Cell: i%12 + 1}
		// The truck is requested at once, on the pool.
		if err := sys.RequestTruckDurable(ctx, order, i%6+1); err != nil {
			return nil, err
		}
		// The light goes on in this goroutine: we see the first attempt.
		var ae *runtime.AttemptError
		if err := sys.LightOnDurable(ctx, slot, "green"); errors.As(err, &ae) {
			syncFailures++
		} else if err != nil {
			return nil, err
		}
		if err := sys.LightOffDurable(ctx, slot); err != nil {
			return nil, err
		}
		template, copies := "A6", 1+i%2
		if i%8 == 5 {
			template = "XL" // the printer refuses it: permanent error, dead task
		}
		if err := sys.PrintLabelDurable(ctx, order, template, &copies); err != nil {
			return nil, err
		}
		// Departure is scheduled after loading.
		if err := sys.DepartDurable(ctx, order, fmt.Sprintf("TRK-%02d", i%6+1)); err != nil {
			return nil, err
		}
		// The order's status change and its upstream feedback commit together.
		if err := finishOrder(ctx, rt, sys, order, i); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(out, "submitted %d tasks; %d sync LightOn calls saw their first attempt fail (retrying in the background)\n\n", 6*o.Orders, syncFailures)

	deadline := time.Now().Add(o.Timeout)
	var sum *Summary
	for {
		if sum, err = summarize(ctx, rt, firstID, alerts); err != nil {
			return nil, err
		}
		fmt.Fprintln(out, sum.ProgressLine())
		if sum.AllTerminal() || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let the last alert actions finish
	sum.HandSlips, sum.Pages = len(sys.HandSlips()), len(sys.Paged())
	fmt.Fprintln(out)
	sum.Print(out)
	if dead := sum.DeadTasks; len(dead) > 0 {
		fmt.Fprintf(out, "\ndead tasks stay visible for an operator (argoctl list -state dead):\n")
		for _, d := range dead {
			fmt.Fprintf(out, "  task %d %s: %s\n", d.ID, d.Name, firstLine(d.ErrorMsg))
		}
	}
	if slips := sys.HandSlips(); len(slips) > 0 {
		fmt.Fprintf(out, "\npick slips printed by hand (LightOn fallback):\n")
		for _, s := range slips {
			fmt.Fprintf(out, "  %s\n", firstLine(s))
		}
	}
	return sum, nil
}

// finishOrder marks the order finished and submits its upstream feedback in
// one transaction: both happen or neither.
func finishOrder(ctx context.Context, rt *runtime.Runtime, sys *integration.Systems, order integration.OrderID, i int) error {
	tx, err := rt.DB().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "INSERT INTO wh_order (id, status) VALUES (?, 'finished')", string(order)); err != nil {
		return err
	}
	lines := []integration.Line{{SKU: "SKU-" + fmt.Sprint(100+i), Qty: 1 + i%3}, {SKU: "SKU-900", Qty: 2}}
	if _, err := sys.ReportFinishedDurableTx(ctx, tx, order, lines, map[string]string{"dock": fmt.Sprint(i%6 + 1)}); err != nil {
		return err
	}
	return tx.Commit()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// alertCounter is a runtime.Observer that counts alerts per task name.
type alertCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *alertCounter) Submitted(string)                                             {}
func (a *alertCounter) AttemptDone(task, kind, outcome string, d, lag time.Duration) {}
func (a *alertCounter) Finished(string, runtime.State)                               {}
func (a *alertCounter) LeaseRescued(string)                                          {}
func (a *alertCounter) ClaimError(error)                                             {}
func (a *alertCounter) AlertFired(task string)                                       { a.mu.Lock(); a.n[task]++; a.mu.Unlock() }
func (a *alertCounter) get(task string) int                                          { a.mu.Lock(); defer a.mu.Unlock(); return a.n[task] }

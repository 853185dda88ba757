// Command warehouse runs the warehouse-integration scenario end to end on
// argo: untrusted downstream systems (vehicle dispatch, put-wall lights,
// label printing, the upstream ERP) that fail a share of calls, and durable
// calls to them that retry, fall back, alert and end dead where they must.
//
//	go run ./examples/warehouse                 # embedded SQLite in a temp dir
//	go run ./examples/warehouse -db ./wh.db     # keep the database for argoctl
//	go run ./examples/warehouse -dsn 'mysql:root@tcp(127.0.0.1:3306)/argo'
//
// It prints live progress, then a summary per task name, and exits 0 when
// every task ended and the numbers add up.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.DSN, "dsn", "", `database: "sqlite:PATH" or "mysql:user:pw@tcp(host:3306)/db" (default: SQLite in a temp dir)`)
	flag.StringVar(&o.DBPath, "db", "", "SQLite file to use (kept afterwards), instead of a temp dir")
	flag.IntVar(&o.Orders, "orders", 24, "orders to process")
	flag.Float64Var(&o.FailRate, "fail", 0.35, "share of downstream calls that fail (0..1)")
	flag.Uint64Var(&o.Seed, "seed", 7, "seed of the downstream failures (same seed, same failures)")
	flag.DurationVar(&o.Timeout, "timeout", 30*time.Second, "give up after this long")
	flag.BoolVar(&o.Verbose, "v", false, "log every retry (slog)")
	flag.Parse()
	if o.FailRate < 0 || o.FailRate >= 1 || o.Orders < 1 {
		fmt.Fprintln(os.Stderr, "warehouse: -fail must be in [0, 1) and -orders at least 1")
		os.Exit(2)
	}
	if o.DSN == "" {
		path := o.DBPath
		if path == "" {
			dir, err := os.MkdirTemp("", "argo-warehouse")
			if err != nil {
				fmt.Fprintln(os.Stderr, "warehouse:", err)
				os.Exit(1)
			}
			defer os.RemoveAll(dir)
			path = filepath.Join(dir, "argo.db")
		}
		o.DSN = "sqlite:" + path
	}
	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if o.Verbose {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	sum, err := run(ctx, o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "warehouse:", err)
		os.Exit(1)
	}
	if err := sum.Check(); err != nil {
		fmt.Fprintln(os.Stderr, "warehouse:", err)
		os.Exit(1)
	}
}

// Command argoctl shows and repairs what argo holds in its tables: task
// counts and rates, lists of tasks by state, name, shard, age or error,
// one task with its arguments and attempt history, and it requeues dead
// tasks or discards tasks (with a reason). It also applies the embedded
// migrations.
//
//	argoctl -dsn sqlite:argo.db stats -window 1h
//	argoctl list -state dead,retrying -name warehouse.LightOn
//	argoctl show 42
//	argoctl requeue -state dead -name warehouse.LightOn --dry-run
//	argoctl requeue 42 -reason "peripheral firmware fixed"
//	argoctl discard 42 -reason "slot removed from the wall"
//
// The database comes from -dsn or ARGO_DSN ("sqlite:PATH" or
// "mysql:user:pw@tcp(host:3306)/db"). Output is a table, or JSON with -o json.
// Errors print one line on stderr and exit 1; usage errors exit 2.
package main

import (
	"context"
	"log"
	"os"
	"os/signal"

	"github.com/go-sql-driver/mysql"
)

func main() {
	// The MySQL driver logs some connection errors itself; argoctl reports
	// every error once, on one line.
	_ = mysql.SetLogger(log.New(discard{}, "", 0))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

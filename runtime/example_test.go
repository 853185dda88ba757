package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/argo-retry/argo/runtime"
)

// A task that fails twice and then succeeds, on the embedded SQLite default.
// argogen writes the TaskDef and the typed wrapper for you; here it is by hand.
func Example() {
	dir, _ := os.MkdirTemp("", "argo-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	rt, err := runtime.Start(ctx, runtime.Config{
		DSN:          "sqlite:" + filepath.Join(dir, "argo.db"),
		AutoMigrate:  true,
		PollInterval: 10 * time.Millisecond,
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Stop(ctx)

	calls := 0
	done := make(chan struct{})
	lightOn := &runtime.TaskDef{
		Name:   "warehouse.LightOn",
		Policy: runtime.RetryPolicy{MaxAttempts: 5, Backoff: runtime.BackoffFixed, Initial: 10 * time.Millisecond},
		Run: func(ctx context.Context, args []byte) error {
			calls++
			_, attempt, _ := runtime.AttemptFrom(ctx)
			if attempt < 3 {
				return errors.New("peripheral system timed out")
			}
			fmt.Printf("light on %s at attempt %d\n", args, attempt)
			close(done)
			return nil
		},
	}
	if err := rt.Register(lightOn); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := rt.Submit(ctx, runtime.Call{Task: lightOn, Args: []byte(`{"slot":"A-01"}`)}); err != nil {
		fmt.Println(err)
		return
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		fmt.Println("timed out waiting for the task")
	}
	fmt.Println("calls:", calls)
	// Output:
	// light on {"slot":"A-01"} at attempt 3
	// calls: 3
}

// Permanent skips the remaining retries: the task goes straight to its
// fallback, which gets the same arguments.
func ExamplePermanent() {
	dir, _ := os.MkdirTemp("", "argo-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	rt, _ := runtime.Start(ctx, runtime.Config{DSN: "sqlite:" + filepath.Join(dir, "argo.db"), AutoMigrate: true, Logger: slog.New(slog.DiscardHandler)})
	defer rt.Stop(ctx)

	done := make(chan struct{})
	print := &runtime.TaskDef{
		Name:   "warehouse.PrintLabel",
		Policy: runtime.DefaultRetryPolicy(),
		Run: func(ctx context.Context, args []byte) error {
			return runtime.Permanent(errors.New("printer answered 400: unknown label template"))
		},
		Fallback: func(ctx context.Context, args []byte, lastErr error) error {
			fmt.Printf("print %s by hand: %v\n", args, lastErr)
			close(done)
			return nil
		},
	}
	rt.Register(print)
	rt.Submit(ctx, runtime.Call{Task: print, Args: []byte(`{"order":"SO-1"}`)})
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		fmt.Println("timed out waiting for the task")
	}
	// Output:
	// print {"order":"SO-1"} by hand: printer answered 400: unknown label template
}

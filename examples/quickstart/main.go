// Command quickstart is the smallest argo program: one durable function,
// its generated wrapper, and the runtime on the embedded SQLite.
//
//	go generate ./examples/quickstart && go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/argo-retry/argo/runtime"
)

func main() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "argo-quickstart")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	// 1. Start the runtime on an embedded SQLite file.
	rt, err := runtime.Start(ctx, runtime.Config{
		DSN:          "sqlite:" + filepath.Join(dir, "argo.db"),
		AutoMigrate:  true,
		PollInterval: 100 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Stop(ctx)

	// 2. Register the package's durable functions (generated).
	if err := ArgoRegister(rt); err != nil {
		log.Fatal(err)
	}

	// 3. Call the wrapper instead of the function: the call is stored, then
	// run, and retried until it succeeds or its retries run out.
	if err := SendReceiptDurable(ctx, "SO-1001", 4250); err != nil {
		log.Fatal(err)
	}

	// 4. Wait for it: the runtime retried it twice, then recorded its success.
	deadline := time.Now().Add(30 * time.Second)
	for {
		counts, err := rt.Inspector().CountByState(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if counts[runtime.StateSucceeded] == 1 || time.Now().After(deadline) {
			fmt.Printf("attempts: %d, succeeded tasks: %d\n", calls.Load(), counts[runtime.StateSucceeded])
			return
		}
		time.Sleep(50 * time.Millisecond) // poll the table again
	}
}

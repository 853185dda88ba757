package e2e

import (
	"context"
	"errors"
	"sync"

	"github.com/argo-retry/argo/runtime"
)

// stages records what Stage ran, and holds a stage until the test opens
// its gate.
var stages = struct {
	mu    sync.Mutex
	log   []string // "start NAME", "end NAME"
	gates map[string]chan struct{}
	open  map[string]bool
	all   bool // every gate open, those made later too
}{gates: map[string]chan struct{}{}, open: map[string]bool{}}

// gate returns the channel Stage name waits on, made if needed.
func gate(name string) chan struct{} {
	stages.mu.Lock()
	defer stages.mu.Unlock()
	if stages.gates[name] == nil {
		stages.gates[name] = make(chan struct{})
		if stages.all {
			stages.open[name] = true
			close(stages.gates[name])
		}
	}
	return stages.gates[name]
}

// openGate lets Stage name finish (once; again is a no-op).
func openGate(name string) {
	c := gate(name)
	stages.mu.Lock()
	defer stages.mu.Unlock()
	if !stages.open[name] {
		stages.open[name] = true
		close(c)
	}
}

// openAllGates lets every Stage finish, those that start later too.
func openAllGates() {
	stages.mu.Lock()
	stages.all = true
	names := make([]string, 0, len(stages.gates))
	for name := range stages.gates {
		names = append(names, name)
	}
	stages.mu.Unlock()
	for _, name := range names {
		openGate(name)
	}
}

func logStage(event string) {
	stages.mu.Lock()
	defer stages.mu.Unlock()
	stages.log = append(stages.log, event)
}

// Stage is one step of a small pipeline: it waits for its gate (the test
// opens it), and a stage named "broken" fails for good.
//
//argo:retry retries=0
func Stage(ctx context.Context, name string) error {
	logStage("start " + name)
	select {
	case <-gate(name):
	case <-ctx.Done():
		return ctx.Err()
	}
	if name == "broken" {
		logStage("failed " + name)
		return runtime.Permanent(errors.New("stage broken cannot run"))
	}
	logStage("end " + name)
	return nil
}

// Package e2e is argogen's end-to-end test. Its //argo:retry functions and
// methods are generated into argo_gen.go by argogen (TestE2EUpToDate in
// package gen fails when that file is stale) and run against the runtime on
// SQLite by e2e_test.go.
package e2e

//go:generate go run ../../cmd/argogen

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/argo-retry/argo/runtime"
)

// Order is a structured argument.
type Order struct {
	ID    int64             `json:"id"`
	Lines []string          `json:"lines"`
	Attrs map[string]string `json:"attrs"`
	Note  *string           `json:"note"`
}

// journal records what the tasks saw, for the test to inspect.
type journal struct {
	mu        sync.Mutex
	flaky     map[string]int // calls per key
	fallbacks []fallbackCall
	alerts    []runtime.AlertEvent
	saved     []string
	added     int
	exact     []exactCall
	once      map[string]int // runs of Once per key
}

// exactCall is what one run of Exact received.
type exactCall struct {
	text    string
	f64     float64
	f32     float32
	measure Measure
}

type fallbackCall struct {
	order Order
	tags  []string
	cause error
}

var seen = newJournal()

func newJournal() *journal { return &journal{flaky: map[string]int{}, once: map[string]int{}} }

func (j *journal) do(f func(j *journal)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	f(j)
}

// Flaky fails twice for each key, then succeeds.
//
//argo:retry retries=3 backoff=fixed delay=10ms jitter=none unique-by=key
func Flaky(ctx context.Context, key string) error {
	var n int
	seen.do(func(j *journal) { j.flaky[key]++; n = j.flaky[key] })
	if n <= 2 {
		return fmt.Errorf("flaky %s: failure %d", key, n)
	}
	return nil
}

// Doomed always fails; once its retry is spent, rescue gets its arguments.
//
//argo:retry retries=1 backoff=fixed delay=10ms jitter=none fallback=rescue alert="exhausted && executeTimes == 2" alert-action=page shard-by=tags
func Doomed(ctx context.Context, order Order, tags ...string) error {
	return errors.New("boom: the remote end is down")
}

func rescue(ctx context.Context, order Order, tags ...string) error {
	seen.do(func(j *journal) {
		j.fallbacks = append(j.fallbacks, fallbackCall{order: order, tags: tags, cause: runtime.FallbackCause(ctx)})
	})
	return nil
}

func page(ctx context.Context, ev runtime.AlertEvent) error {
	seen.do(func(j *journal) { j.alerts = append(j.alerts, ev) })
	return nil
}

// Store has a pointer-receiver method that runs its first attempt in the
// caller's goroutine.
type Store struct {
	Prefix string
}

// Save fails when note is nil, else records prefix+id+note.
//
//argo:retry thread=sync retries=0
func (s *Store) Save(ctx context.Context, id int, note *string) error {
	if note == nil {
		return runtime.Permanent(errors.New("no note"))
	}
	seen.do(func(j *journal) { j.saved = append(j.saved, fmt.Sprintf("%s%d:%s", s.Prefix, id, *note)) })
	return nil
}

// Counter has a value-receiver method without a context parameter.
type Counter struct {
	Step int
}

// Add adds n×Step.
//
//argo:retry mode=schedule first-delay=50ms
func (c Counter) Add(n int) error {
	seen.do(func(j *journal) { j.added += n * c.Step })
	return nil
}

// Measure is a structured argument with the shapes encoding/json alters or
// refuses: strings and floats at depth, in slices, maps and pointers.
type Measure struct {
	Label  string             `json:"label"`
	Values []float64          `json:"values"`
	Ratios map[string]float32 `json:"ratios"`
	Peak   *float64           `json:"peak"`
	Notes  []*string          `json:"notes"`
}

// Exact records the arguments it receives, to show they arrive exactly.
//
//argo:retry retries=0
func Exact(ctx context.Context, text string, f64 float64, f32 float32, m Measure) error {
	seen.do(func(j *journal) { j.exact = append(j.exact, exactCall{text: text, f64: f64, f32: f32, measure: m}) })
	return nil
}

// Once records the key of each run; a key is stored once.
//
//argo:retry retries=0 unique-by=key
func Once(ctx context.Context, key string) error {
	seen.do(func(j *journal) { j.once[key]++ })
	return nil
}

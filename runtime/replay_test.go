package runtime

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The replay cases RP-001…RP-005 of the seed task-system spec (section 6),
// with its retry settings: 3 retries (4 attempts), exponential backoff
// base×2^(n-1) capped, plus additive jitter up to 300ms. The base is scaled
// from 1s to 10ms (and the jitter to 3ms) so the cases run in milliseconds;
// TestSeedBackoffFormula checks the unscaled schedule.

// seedPolicy is the spec's policy with its base scaled by scale.
func seedPolicy(scale time.Duration) RetryPolicy {
	return RetryPolicy{MaxAttempts: 4, Backoff: BackoffExponential, Initial: scale, Multiplier: 2, MaxDelay: 30 * scale,
		Jitter: Jitter{Kind: JitterAdditive, Max: 300 * scale / 1000}}
}

// transitionLog records, per task, the states the runtime moved it through.
type transitionLog struct {
	mu  sync.Mutex
	log map[string][]string
}

func (l *transitionLog) Submitted(string) {}
func (l *transitionLog) AttemptDone(task, kind, outcome string, d, lag time.Duration) {
	if kind == "attempt" {
		l.add(task, "running")
	}
}
func (l *transitionLog) Finished(task string, s State) { l.add(task, seedName(s)) }
func (l *transitionLog) AlertFired(string)             {}
func (l *transitionLog) LeaseRescued(string)           {}
func (l *transitionLog) ClaimError(error)              {}

func (l *transitionLog) add(task, s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.log == nil {
		l.log = map[string][]string{}
	}
	l.log[task] = append(l.log[task], s)
}

func (l *transitionLog) get(task string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.log[task], " -> ")
}

// seedName maps argo's states to the seed spec's names (the state table in docs/semantics.md).
func seedName(s State) string {
	switch s {
	case StatePending:
		return "queued"
	case StateExhausted:
		return "dlq_pending"
	case StateDead:
		return "dlq_recorded -> failed"
	}
	return s.String()
}

func TestReplayCases(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		log := &transitionLog{}
		cfg := testConfig(dsn)
		cfg.Observer = log
		rt := startRuntime(t, cfg)
		ctx := context.Background()
		// failing returns a def that fails its first n attempts transiently.
		failing := func(name string, n int) *TaskDef {
			var mu sync.Mutex
			calls := 0
			return &TaskDef{Name: name, Policy: seedPolicy(10 * time.Millisecond), Run: func(ctx context.Context, args []byte) error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls <= n {
					return errors.New("transient: peer timeout")
				}
				return nil
			}}
		}
		cases := []struct {
			id, flow   string
			def        *TaskDef
			final      State
			retryCount int // the spec's retry_count: attempts after the first
		}{
			{"RP-001", "running -> succeeded", failing("RP-001", 0), StateSucceeded, 0},
			{"RP-002", "running -> retrying -> running -> succeeded", failing("RP-002", 1), StateSucceeded, 1},
			{"RP-003", "running -> retrying -> running -> retrying -> running -> retrying -> running -> succeeded", failing("RP-003", 3), StateSucceeded, 3},
			{"RP-004", "running -> retrying -> running -> retrying -> running -> retrying -> running -> dlq_pending -> dlq_recorded -> failed", failing("RP-004", 4), StateDead, 3},
		}
		for _, c := range cases {
			t.Run(c.id, func(t *testing.T) {
				rt.Register(c.def)
				id, err := rt.Submit(ctx, Call{Task: c.def, Args: []byte(`{}`)})
				if err != nil {
					t.Fatal(err)
				}
				task := waitState(t, rt, id, c.final, 10*time.Second)
				waitFor(t, 2*time.Second, "transition log", func() bool { return strings.HasSuffix(log.get(c.id), c.flow[strings.LastIndex(c.flow, " ")+1:]) })
				if got := log.get(c.id); got != c.flow {
					t.Fatalf("flow\n got %s\nwant %s", got, c.flow)
				}
				if task.ExecuteTimes-1 != c.retryCount {
					t.Fatalf("retry_count = %d, want %d", task.ExecuteTimes-1, c.retryCount)
				}
				atts, _ := rt.Inspector().Attempts(ctx, id)
				if c.final == StateDead {
					// The dead letter is linked to its task (dlq_id = task id) and keeps every attempt.
					if len(atts) != 5 || atts[4].Kind != "fallback" || atts[4].TaskPK != id {
						t.Fatalf("dead-letter history %+v", atts)
					}
				}
				for i, a := range atts {
					if a.Kind == "attempt" && a.Outcome == OutcomeFailed && a.Attempt < 4 {
						want := seedPolicy(10*time.Millisecond).Delay(id, i+1).Milliseconds()
						if a.BackoffMs != want {
							t.Fatalf("attempt %d backoff %d ms, want %d", i+1, a.BackoffMs, want)
						}
					}
				}
			})
		}
		t.Run("RP-005", func(t *testing.T) {
			// A repeated terminal write is refused with WF_STATE_TRANSITION_INVALID.
			err := CheckTransition(1, StateSucceeded, StateSucceeded)
			var te *TransitionError
			if !errors.As(err, &te) || te.Code != "WF_STATE_TRANSITION_INVALID" || !strings.Contains(err.Error(), "WF_STATE_TRANSITION_INVALID") {
				t.Fatalf("succeeded -> succeeded: %v", err)
			}
			def := failing("RP-005", 0)
			rt.Register(def)
			id, _ := rt.Submit(ctx, Call{Task: def, Args: []byte(`{}`)})
			waitState(t, rt, id, StateSucceeded, 5*time.Second)
			if err := rt.Inspector().Requeue(ctx, id); !errors.Is(err, ErrTransitionInvalid) {
				t.Fatalf("requeue of a succeeded task: %v", err)
			}
			in := rt.Inspector()
			in.SingleOperatorDiscard = true
			if err := in.Discard(ctx, id, "late"); !errors.As(err, &te) || te.From != StateSucceeded {
				t.Fatalf("discard of a succeeded task: %v", err)
			}
		})
	})
}

func TestSeedBackoffFormula(t *testing.T) {
	// delay_ms = min(30000, 1000 * 2^(retry_count-1)) + jitter_ms, jitter_ms in [0, 300]
	p := seedPolicy(time.Second)
	for attempt := 1; attempt <= 8; attempt++ {
		base := min(30*time.Second, time.Second<<(attempt-1))
		for id := int64(1); id <= 50; id++ {
			d := p.Delay(id, attempt)
			if d < base || d > base+300*time.Millisecond {
				t.Fatalf("attempt %d task %d: delay %s outside [%s, %s]", attempt, id, d, base, base+300*time.Millisecond)
			}
			if d != p.Delay(id, attempt) {
				t.Fatal("delay is not deterministic")
			}
		}
	}
}

func TestStateMachine(t *testing.T) {
	for _, from := range AllStates {
		for _, to := range AllStates {
			err := CheckTransition(7, from, to)
			if CanTransition(from, to) != (err == nil) {
				t.Fatalf("%s -> %s: CanTransition and CheckTransition disagree", from, to)
			}
			// Only an operator moves these (skipped: its upstream task's requeue).
			operatorMoved := from == StateDead || from == StateDiscarded || from == StateSkipped
			if from.Terminal() && !operatorMoved && err == nil {
				t.Fatalf("terminal %s may move to %s", from, to)
			}
		}
		if parsed, err := ParseState(from.String()); err != nil || parsed != from {
			t.Fatalf("ParseState(%s) = %v, %v", from, parsed, err)
		}
	}
	// Argo's status codes keep their meaning.
	if StatePending != 0 || StateRunning != 1 || StateRetrying != 2 || StateSucceeded != 3 {
		t.Fatal("Argo codes 0–3 changed")
	}
	if got := Transitions(StateDead); !slices.Equal(got, []State{StatePending, StateDiscarded}) {
		t.Fatalf("dead may go to %v", got)
	}
	if _, err := ParseState("bogus"); err == nil {
		t.Fatal("ParseState accepted bogus")
	}
}

package argotype

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func describeTransitions(trs []Transition) []string {
	var out []string
	for _, t := range trs {
		out = append(out, fmt.Sprintf("%d #%d %s %s %s->%s %s %s", t.At, t.Attempt, t.Kind, t.What, t.From, t.To, t.By, t.TraceID))
	}
	return out
}

// The history and the trail merge by time (history first at the same
// millisecond); an operator action's from is the state the move before
// it left, its to the state it leads to; a cancel whose stopped attempt's
// row records the move moves nothing itself.
func TestTaskTransitions(t *testing.T) {
	history := []Attempt{
		{Attempt: 1, Kind: "attempt", Outcome: OutcomeFailed, Worker: "a", FinishedAt: 10, From: StateRunning, To: StateRetrying, TraceID: "0af7"},
		{Attempt: 2, Kind: "attempt", Outcome: OutcomeCancelled, Worker: "b", FinishedAt: 30, From: StateRunning, To: StateDiscarded},
	}
	trail := []OperatorAction{
		{Action: ActionRunNow, Operator: "alice", At: 20},
		{Action: ActionCancel, Operator: "bob", At: 30},
		{Action: ActionRequeue, Operator: "carol", At: 40, OtherTask: sql.NullInt64{Int64: 7, Valid: true}},
	}
	got := describeTransitions(TaskTransitions(history, trail, StatePending))
	want := []string{
		"10 #1 attempt failed running->retrying a 0af7",
		"20 #1 operator run_now retrying->retrying alice ",
		"30 #2 attempt cancelled running->discarded b ",
		"30 #2 operator cancel discarded->discarded bob ",
		"40 #2 operator requeue discarded->discarded carol ",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("transitions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A force-fail before any attempt: from the initial state.
	got = describeTransitions(TaskTransitions(nil, []OperatorAction{{Action: ActionForceFail, Operator: "op", At: 5}}, StateBlocked))
	if want := []string{"5 #0 operator force_fail blocked->dead op "}; !slices.Equal(got, want) {
		t.Fatalf("force-fail of a blocked task: %q, want %q", got, want)
	}
}

package faultcheck

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
	"github.com/argo-retry/argo/runtime"
)

// history builds a synthetic history: the checker's own test, each
// invariant shown to fire on the break it is for and to stay quiet on a
// clean history.
type history struct {
	t0   time.Time
	in   Input
	args map[string][]byte
}

func newHistory() *history {
	return &history{t0: time.Unix(1_800_000_000, 0), args: map[string][]byte{}, in: Input{Died: map[string]time.Time{}, CutOff: map[string]bool{}}}
}

func (h *history) at(ms int) int64 { return h.t0.Add(time.Duration(ms) * time.Millisecond).UnixMicro() }

// call submits op (answered nil with id) and writes its row in state.
func (h *history) call(op string, id int64, name string, state runtime.State, times int, ms int, mod func(*Record, *Row)) {
	raw, _ := json.Marshal(Args{Op: op, Text: "ÄRGER 🚀", Blob: []byte{0, 255}})
	h.args[op] = raw
	begin := Record{Kind: KindSubmit, Ev: "begin", At: h.at(ms), Inst: "w0.0", Op: op, Name: name, Sum: Sum(raw), Via: ViaSubmit}
	row := Row{ID: id, Name: name, State: state, ExecuteTimes: times, Param: raw}
	if mod != nil {
		mod(&begin, &row)
	}
	h.in.Records = append(h.in.Records, begin,
		Record{Kind: KindSubmit, Ev: "end", At: h.at(ms + 1), Inst: "w0.0", Op: op, Name: name, Via: ViaSubmit, Answer: AnswerNil, ID: id})
	h.in.Rows = append(h.in.Rows, row)
}

// exec records an execution of task id from ms to end on inst.
func (h *history) exec(id int64, attempt int, inst string, ms, end int, out string) {
	var op string
	for _, r := range h.in.Rows {
		if r.ID == id {
			var a Args
			json.Unmarshal(r.Param, &a)
			op = a.Op
		}
	}
	h.in.Records = append(h.in.Records,
		Record{Kind: KindExec, Ev: "start", At: h.at(ms), Inst: inst, Task: id, Attempt: attempt, Op: op, Sum: Sum(h.args[op])},
		Record{Kind: KindExec, Ev: "end", At: h.at(end), Inst: inst, Task: id, Attempt: attempt, Op: op, Out: out})
}

// progress records report step of steps of task id's attempt on inst at ms.
func (h *history) progress(id int64, attempt int, inst string, ms, step, steps int) {
	h.in.Records = append(h.in.Records, Record{Kind: KindProgress, Ev: "report", At: h.at(ms), Inst: inst, Task: id, Attempt: attempt,
		Note: ProgressNote(attempt, step, steps), Frac: float64(step) / float64(steps+1)})
}

func invariants(vs []Violation) map[string]int {
	m := map[string]int{}
	for _, v := range vs {
		m[v.Inv]++
	}
	return m
}

func TestCheckCleanHistory(t *testing.T) {
	h := newHistory()
	h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 2, 0, nil)
	h.exec(1, 1, "w0.0", 10, 20, OutFail)
	h.exec(1, 2, "w1.0", 40, 50, OutOK)
	h.call("0-1-0", 2, TaskDead, runtime.StateDead, 2, 0, nil)
	h.exec(2, 1, "w0.0", 10, 20, OutFail)
	h.exec(2, 2, "w0.0", 30, 40, OutFail)
	// Task 3 reports progress: attempt 1 fails keeping its last report (or
	// an earlier one), attempt 2's report is on the row.
	h.call("0-2-0", 3, TaskPlain, runtime.StateSucceeded, 2, 0, func(_ *Record, r *Row) {
		r.ProgressNote, r.ProgressAttempt = ProgressNote(2, 5, 5), 2
		r.ErrorCode = FailCode(OutFail, 1) // its last failed attempt's, kept by the success
	})
	h.exec(3, 1, "w0.0", 10, 100, OutFail)
	h.progress(3, 1, "w0.0", 30, 1, 5)
	h.progress(3, 1, "w0.0", 60, 2, 5)
	h.exec(3, 2, "w0.0", 200, 300, OutOK)
	h.progress(3, 2, "w0.0", 290, 5, 5)
	h.in.Attempts = append(h.in.Attempts, AttemptRow{Task: 3, Attempt: 1, Outcome: runtime.OutcomeFailed, Worker: "w0.0", ProgressNote: ProgressNote(1, 1, 5), ErrorCode: FailCode(OutFail, 1)})
	if vs := Check(h.in); len(vs) > 0 {
		t.Fatalf("a clean history has violations: %+v", vs)
	}
}

func TestCheckFindsEachBreak(t *testing.T) {
	cases := []struct {
		inv   string
		build func(h *history)
	}{
		{InvExecOnce, func(h *history) {
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 1, 0, nil)
			h.exec(1, 1, "w0.0", 10, 20, OutOK)
			h.exec(1, 1, "w1.0", 30, 40, OutOK)
		}},
		{InvAttemptOverlap, func(h *history) {
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 2, 0, nil)
			h.exec(1, 1, "w0.0", 10, 3000, OutCancelled)
			h.exec(1, 2, "w1.0", 2500, 2600, OutOK)
		}},
		{InvExecUnended, func(h *history) {
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 1, 0, nil)
			h.in.Records = append(h.in.Records, Record{Kind: KindExec, Ev: "start", At: h.at(10), Inst: "w0.0", Task: 1, Attempt: 1, Op: "0-0-0", Sum: Sum(h.args["0-0-0"])})
		}},
		{InvArgsExact, func(h *history) {
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 1, 0, func(_ *Record, r *Row) {
				var a Args
				json.Unmarshal(r.Param, &a)
				a.Text = "ARGER" // altered on the way
				r.Param, _ = json.Marshal(a)
			})
		}},
		{InvCrypt, func(h *history) { // a row of a name the workers encrypt, stored in clear
			h.in.Crypt = true
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 1, 0, nil)
			h.exec(1, 1, "w0.0", 10, 20, OutOK)
		}},
		{InvLost, func(h *history) {
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 1, 0, nil)
			h.in.Rows = nil
		}},
		{InvAnswer, func(h *history) {
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 0, 0, nil)
			h.in.Records[1].Answer, h.in.Records[1].ID = AnswerNotPersisted, 0
		}},
		{InvPhantom, func(h *history) {
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 0, 0, nil)
			h.in.Records = h.in.Records[2:] // no submit
		}},
		{InvTerminal, func(h *history) {
			h.call("0-0-0", 1, TaskPlain, runtime.StatePending, 0, 0, nil)
		}},
		{InvOutcome, func(h *history) {
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 1, 0, nil)
			h.exec(1, 1, "w0.0", 10, 20, OutFail) // succeeded at an attempt that failed
		}},
		{InvChargedUnrun, func(h *history) {
			h.call("0-0-0", 1, TaskOnce, runtime.StateDead, 1, 0, nil)
			h.in.Attempts = []AttemptRow{{Task: 1, Attempt: 1, Outcome: runtime.OutcomeLeaseExpired, Worker: "w0.0"}}
		}},
		{InvDepsOrder, func(h *history) {
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 1, 0, nil)
			h.call("0-0-1", 2, TaskPlain, runtime.StateSucceeded, 1, 2, func(b *Record, _ *Row) { b.After = []string{"0-0-0"} })
			h.exec(1, 1, "w0.0", 10, 50, OutOK)
			h.exec(2, 1, "w1.0", 30, 40, OutOK) // before its upstream succeeded
		}},
		{InvDepsTerminal, func(h *history) {
			h.call("0-0-0", 1, TaskDead, runtime.StateDead, 2, 0, nil)
			h.call("0-0-1", 2, TaskPlain, runtime.StateBlocked, 0, 2, func(b *Record, _ *Row) { b.After = []string{"0-0-0"} })
			h.exec(1, 1, "w0.0", 10, 20, OutFail)
			h.exec(1, 2, "w0.0", 30, 40, OutFail)
		}},
		{InvOrderOverlap, func(h *history) {
			key := func(b *Record, r *Row) { b.OrderKey, r.OrderKey = "k", "k" }
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 1, 0, key)
			h.call("1-0-0", 2, TaskPlain, runtime.StateSucceeded, 1, 0, key)
			h.exec(1, 1, "w0.0", 10, 50, OutOK)
			h.exec(2, 1, "w1.0", 30, 60, OutOK)
		}},
		{InvOrderSubmit, func(h *history) {
			key := func(b *Record, r *Row) { b.OrderKey, r.OrderKey = "k", "k" }
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 1, 0, key)
			h.call("1-0-0", 2, TaskPlain, runtime.StateSucceeded, 1, 5, key)
			h.exec(2, 1, "w1.0", 10, 20, OutOK) // the later call first
			h.exec(1, 1, "w0.0", 30, 40, OutOK)
		}},
		{InvRefusal, func(h *history) {
			h.call("0-0-0", 1, TaskCapped, runtime.StateSucceeded, 0, 0, func(b *Record, _ *Row) { b.Refuse, b.OrderKey = true, "k" })
		}},
		{InvOperator, func(h *history) {
			h.call("0-0-0", 1, TaskPlain, runtime.StateDiscarded, 1, 0, nil)
			h.in.Records = append(h.in.Records, Record{Kind: KindOperator, Ev: ActDiscard, At: h.at(5), Inst: "operator", Task: 1, Answer: "ok"})
			h.exec(1, 1, "w0.0", 10, 20, OutOK) // started after the discard
		}},
		{InvCancel, func(h *history) {
			h.call("0-0-0", 1, TaskPlain, runtime.StateDiscarded, 2, 0, nil)
			h.exec(1, 1, "w0.0", 10, 20, OutFail)
			h.op(ActCancel, 1, 25, 30, "ok")    // the retry waits: cancelled
			h.exec(1, 2, "w1.0", 40, 50, OutOK) // started after the cancel
		}},
		{InvFlowLimit, func(h *history) {
			for i := range CapLimit + 1 {
				id := int64(i + 1)
				h.call("0-"+string(rune('a'+i))+"-0", id, TaskCapped, runtime.StateSucceeded, 1, 0, nil)
				h.exec(id, 1, "w0.0", 10+i, 100, OutOK)
			}
		}},
		{InvProgress, func(h *history) { // a report landed on the next attempt's row (the renewal not fenced on the attempt)
			h.call("0-0-0", 1, TaskPlain, runtime.StateRunning, 2, 0, func(_ *Record, r *Row) {
				r.ProgressNote, r.ProgressAttempt = ProgressNote(1, 3, 5), 2
			})
			h.exec(1, 1, "w0.0", 10, 3000, OutCancelled)
			h.progress(1, 1, "w0.0", 500, 3, 5)
		}},
		{InvProgress, func(h *history) { // the history keeps a report made after the attempt ended
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 2, 0, nil)
			h.exec(1, 1, "w0.0", 10, 100, OutFail)
			h.exec(1, 2, "w0.0", 200, 300, OutOK)
			h.in.Attempts = []AttemptRow{{Task: 1, Attempt: 1, Outcome: runtime.OutcomeFailed, Worker: "w0.0", ProgressNote: ProgressNote(1, 1, 5)}}
			h.progress(1, 1, "w0.0", 150, 1, 5)
		}},
		{InvProgress, func(h *history) { // the last report of a failed attempt lost by its finish
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 2, 0, nil)
			h.exec(1, 1, "w0.0", 10, 100, OutFail)
			h.exec(1, 2, "w0.0", 200, 300, OutOK)
			h.progress(1, 1, "w0.0", 50, 1, 5)
			h.in.Attempts = []AttemptRow{{Task: 1, Attempt: 1, Outcome: runtime.OutcomeFailed, Worker: "w0.0"}}
		}},
		{InvErrorCode, func(h *history) { // a history row keeps another attempt's code
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 3, 0, func(_ *Record, r *Row) { r.ErrorCode = FailCode(OutFail, 2) })
			h.exec(1, 1, "w0.0", 10, 100, OutFail)
			h.exec(1, 2, "w0.0", 200, 300, OutFail)
			h.exec(1, 3, "w0.0", 400, 500, OutOK)
			h.in.Attempts = []AttemptRow{
				{Task: 1, Attempt: 1, Outcome: runtime.OutcomeFailed, Worker: "w0.0", ErrorCode: FailCode(OutFail, 2)},
				{Task: 1, Attempt: 2, Outcome: runtime.OutcomeFailed, Worker: "w0.0", ErrorCode: FailCode(OutFail, 2)},
			}
		}},
		{InvErrorCode, func(h *history) { // the code of a failed attempt lost by its finish
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 2, 0, nil)
			h.exec(1, 1, "w0.0", 10, 100, OutPermanent)
			h.exec(1, 2, "w0.0", 200, 300, OutOK)
			h.in.Attempts = []AttemptRow{{Task: 1, Attempt: 1, Outcome: runtime.OutcomePermanent, Worker: "w0.0"}}
		}},
		{InvErrorCode, func(h *history) { // the task row keeps an earlier attempt's code, not its last failed one's
			h.call("0-0-0", 1, TaskPlain, runtime.StateRetrying, 2, 0, func(_ *Record, r *Row) { r.ErrorCode = FailCode(OutFail, 1) })
			h.exec(1, 1, "w0.0", 10, 100, OutFail)
			h.exec(1, 2, "w0.0", 200, 300, OutFail)
			h.in.Attempts = []AttemptRow{
				{Task: 1, Attempt: 1, Outcome: runtime.OutcomeFailed, Worker: "w0.0", ErrorCode: FailCode(OutFail, 1)},
				{Task: 1, Attempt: 2, Outcome: runtime.OutcomeFailed, Worker: "w0.0", ErrorCode: FailCode(OutFail, 2)},
			}
		}},
		{InvTransitions, func(h *history) { // a permanent error's row records a retry
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 2, 0, nil)
			h.exec(1, 1, "w0.0", 10, 100, OutPermanent)
			h.exec(1, 2, "w0.0", 200, 300, OutOK)
			h.in.Attempts = []AttemptRow{{ID: 1, Task: 1, Attempt: 1, Outcome: runtime.OutcomePermanent, Worker: "w0.0", ErrorCode: FailCode(OutPermanent, 1),
				From: runtime.StateRunning, To: runtime.StateRetrying}}
		}},
		{InvTransitions, func(h *history) { // the chain breaks: a fallback's move after a retry
			h.call("0-0-0", 1, TaskPlain, runtime.StateDead, 1, 0, nil)
			h.exec(1, 1, "w0.0", 10, 100, OutFail)
			h.in.Attempts = []AttemptRow{{ID: 1, Task: 1, Attempt: 1, Outcome: runtime.OutcomeFailed, Worker: "w0.0", ErrorCode: FailCode(OutFail, 1),
				From: runtime.StateRunning, To: runtime.StateRetrying}}
			h.in.Fallbacks = []AttemptRow{{ID: 2, Task: 1, Attempt: 1, Outcome: "no_fallback", Worker: "w0.0", From: runtime.StateFallingBack, To: runtime.StateDead}}
		}},
		{InvTransitions, func(h *history) { // the task ends other than its last move into a final state
			h.call("0-0-0", 1, TaskPlain, runtime.StateRecovered, 1, 0, nil)
			h.exec(1, 1, "w0.0", 10, 100, OutFail)
			h.in.Attempts = []AttemptRow{{ID: 1, Task: 1, Attempt: 1, Outcome: runtime.OutcomeFailed, Worker: "w0.0", ErrorCode: FailCode(OutFail, 1),
				From: runtime.StateRunning, To: runtime.StateExhausted}}
			h.in.Fallbacks = []AttemptRow{{ID: 2, Task: 1, Attempt: 1, Outcome: "no_fallback", Worker: "w0.0", From: runtime.StateFallingBack, To: runtime.StateDead}}
		}},
		{InvTransitions, func(h *history) { // a row written without its move
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 2, 0, nil)
			h.exec(1, 1, "w0.0", 10, 100, OutFail)
			h.exec(1, 2, "w0.0", 200, 300, OutOK)
			h.in.Attempts = []AttemptRow{{ID: 1, Task: 1, Attempt: 1, Outcome: runtime.OutcomeFailed, Worker: "w0.0", ErrorCode: FailCode(OutFail, 1),
				From: runtime.StateUnrecorded, To: runtime.StateUnrecorded}}
		}},
		{InvReleaseLost, func(h *history) { // a dependent left blocked by its submit, released by the sweeper
			h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 1, 0, nil)
			h.call("0-0-1", 2, TaskPlain, runtime.StateSucceeded, 1, 0, func(b *Record, _ *Row) { b.After = []string{"0-0-0"} })
			h.exec(1, 1, "w0.0", 10, 20, OutOK)
			h.in.Records = append(h.in.Records, Record{Kind: KindSwept, Ev: "settled", At: h.at(4000), Inst: "w1.0", ID: 1})
			h.exec(2, 1, "w1.0", 4010, 4020, OutOK)
		}},
		{InvFlowRate, func(h *history) {
			for i := range RateAllowed + 1 {
				id := int64(i + 1)
				h.call("0-"+string(rune('a'+i))+"-0", id, TaskRated, runtime.StateSucceeded, 1, 0, nil)
				h.exec(id, 1, "w0.0", 10+50*i, 20+50*i, OutOK)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.inv, func(t *testing.T) {
			h := newHistory()
			c.build(h)
			got := invariants(Check(h.in))
			if got[c.inv] == 0 {
				t.Errorf("invariant %s did not fire; violations: %v", c.inv, got)
			}
		})
	}
}

func TestGenerateIsReproducible(t *testing.T) {
	f, err := ParseFeatures("all")
	if err != nil {
		t.Fatal(err)
	}
	for k := range 200 {
		a, b := Generate(7, 1, k, f), Generate(7, 1, k, f)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Fatalf("operation %d differs between two generations with one seed", k)
		}
	}
	on, _ := ParseFaults("all")
	s1, s2 := Schedule(7, time.Minute, 3, on, true), Schedule(7, time.Minute, 3, on, true)
	if FormatSchedule(s1) != FormatSchedule(s2) || len(s1) < 10 {
		t.Fatalf("schedules of one seed differ, or are short (%d faults):\n%s\n%s", len(s1), FormatSchedule(s1), FormatSchedule(s2))
	}
	if FormatSchedule(Schedule(8, time.Minute, 3, on, true)) == FormatSchedule(s1) {
		t.Fatal("two seeds gave one schedule")
	}
}

// A fallback has no attempt number of its own: run again after its process
// died (or its context ended) it is the same fallback, and that is no
// exec-once violation, nor after its first run ended unrecorded (no
// fallback row names it, or only the rescuer's lease_expired row); a run
// after the run whose outcome the fallback row records is; two runs that
// overlap are attempt-overlap either way.
func TestCheckFallbackRunAgain(t *testing.T) {
	fallback := func(h *history, inst string, ms, end int, out string) {
		h.exec(1, 2, inst, ms, end, out)
		n := len(h.in.Records)
		h.in.Records[n-2].Fallback, h.in.Records[n-1].Fallback = true, true
	}
	// build: attempts 1 and 2 fail, the fallback runs on w0.1 (firstOut)
	// and again on w1.0 at secondAt; rows are the fallback's history rows
	// ("instance:outcome").
	build := func(firstOut string, died bool, secondAt int, rows ...string) Input {
		h := newHistory()
		h.call("0-0-0", 1, TaskFallback, runtime.StateRecovered, 2, 0, nil)
		h.exec(1, 1, "w0.0", 10, 20, OutFail)
		h.exec(1, 2, "w0.0", 30, 40, OutFail)
		fallback(h, "w0.1", 50, 60, firstOut)
		if died {
			h.in.Died["w0.1"] = h.t0.Add(70 * time.Millisecond)
		}
		fallback(h, "w1.0", secondAt, secondAt+10, OutOK)
		for _, r := range rows {
			w, out, _ := strings.Cut(r, ":")
			h.in.Fallbacks = append(h.in.Fallbacks, AttemptRow{Task: 1, Attempt: 2, Outcome: out, Worker: w})
		}
		return h.in
	}
	if vs := invariants(Check(build(OutOK, true, 3000))); vs[InvExecOnce] > 0 || vs[InvAttemptOverlap] > 0 {
		t.Errorf("a fallback run again after its process died: %v, want no exec-once or overlap", vs)
	}
	if vs := invariants(Check(build(OutCancelled, false, 3000))); vs[InvExecOnce] > 0 {
		t.Errorf("a fallback run again after its context ended: %v, want no exec-once", vs)
	}
	if vs := invariants(Check(build(OutOK, false, 3000))); vs[InvExecOnce] > 0 {
		t.Errorf("a fallback run again after its first run ended (its outcome not recorded): %v, want no exec-once", vs)
	}
	if vs := invariants(Check(build(OutOK, false, 3000, "w1.0:"+runtime.OutcomeSucceeded))); vs[InvExecOnce] > 0 {
		t.Errorf("a fallback run again, the second run's outcome recorded: %v, want no exec-once", vs)
	}
	if vs := invariants(Check(build(OutOK, true, 3000, "w0.1:"+runtime.OutcomeLeaseExpired, "w1.0:"+runtime.OutcomeSucceeded))); vs[InvExecOnce] > 0 {
		t.Errorf("a fallback run again after the rescuer charged the first run (lease_expired): %v, want no exec-once", vs)
	}
	if vs := invariants(Check(build(OutOK, false, 3000, "w0.1:"+runtime.OutcomeSucceeded))); vs[InvExecOnce] == 0 {
		t.Errorf("a fallback run again after the first run's outcome was recorded: %v, want exec-once", vs)
	}
	if vs := invariants(Check(build(OutCancelled, false, 55))); vs[InvAttemptOverlap] == 0 {
		t.Errorf("two overlapping runs of a fallback: %v, want attempt-overlap", vs)
	}
}

// An attempt charged (lease_expired) that never ran is allowed to an
// instance a partition cut off (it could not give the row back), not to one
// that only lost a claim's answer (break 8's give-back must have run).
func TestCheckChargedUnrunAfterPartition(t *testing.T) {
	build := func(partitioned bool) Input {
		h := newHistory()
		h.call("0-0-0", 1, TaskOnce, runtime.StateSucceeded, 2, 0, nil)
		h.exec(1, 2, "w1.0", 3000, 3010, OutOK)
		h.in.Attempts = []AttemptRow{{Task: 1, Attempt: 1, Outcome: runtime.OutcomeLeaseExpired, Worker: "w0.0"}}
		h.in.CutOff["w0.0"] = true
		if partitioned {
			h.in.Partitioned = map[string]bool{"w0.0": true}
		}
		return h.in
	}
	if vs := invariants(Check(build(true))); vs[InvChargedUnrun] > 0 {
		t.Errorf("charged to an instance a partition cut off: %v, want no charged-unrun", vs)
	}
	if vs := invariants(Check(build(false))); vs[InvChargedUnrun] == 0 {
		t.Errorf("charged to an instance that only lost a claim's answer: %v, want charged-unrun", vs)
	}
}

// A retry budget's count of first attempts holds each call once: a call
// whose first attempt was given back (undecodable here) and ran again is
// one first attempt; counted once per give-back (#22 break 6), the count
// runs ahead of the histories. The given-back attempt runs again under its
// number without exec-once.
func TestCheckRetryBudget(t *testing.T) {
	build := func(counted int) Input {
		h := newHistory()
		for i := range 10 {
			id := int64(i + 1)
			h.call("0-"+string(rune('a'+i))+"-0", id, TaskBudget, runtime.StateSucceeded, 1, 0, nil)
			h.exec(id, 1, "w0.0", 10, 12, OutGivenBack)
			h.exec(id, 1, "w1.0", 20, 30, OutOK)
		}
		h.in.Budget = &BudgetRow{Start: h.t0.UnixMilli(), Firsts: counted}
		return h.in
	}
	if vs := invariants(Check(build(10))); len(vs) > 0 {
		t.Errorf("each call counted once: %v, want none", vs)
	}
	if vs := invariants(Check(build(20))); vs[InvRetryBudget] == 0 {
		t.Errorf("each call counted twice (once per give-back): %v, want retry-budget", vs)
	}
}

// A big submit the worker saw still unanswered after BigAnswerWithin is an
// answer violation even if its process was killed later (#22 break 7).
func TestCheckBigSubmitWaiting(t *testing.T) {
	h := newHistory()
	h.in.Records = append(h.in.Records,
		Record{Kind: KindSubmit, Ev: "begin", At: h.at(0), Inst: "w0.0", Op: "0-2-0", Name: TaskPlain, Via: "big"},
		Record{Kind: KindSubmit, Ev: "waiting", At: h.at(10_000), Inst: "w0.0", Op: "0-2-0", Name: TaskPlain, Via: "big"})
	h.in.Died["w0.0"] = h.t0.Add(12 * time.Second)
	if vs := invariants(Check(h.in)); vs[InvAnswer] != 1 {
		t.Errorf("a big submit unanswered after %s, its process killed later: %v, want one answer violation", BigAnswerWithin, vs)
	}
}

// An attempt cancelled by its instance's shutdown (Stop) is given back
// undone and runs again under its number: no exec-once then; cancelled on
// an instance that was not stopped, the same number again is.
func TestCheckAttemptAgainAfterStop(t *testing.T) {
	build := func(stopped bool) Input {
		h := newHistory()
		h.call("0-0-0", 1, TaskSync, runtime.StateSucceeded, 1, 0, nil)
		h.exec(1, 1, "w1.0", 10, 20, OutCancelled)
		h.exec(1, 1, "w2.2", 800, 810, OutOK)
		h.in.Stopped = map[string]bool{"w1.0": stopped}
		return h.in
	}
	if vs := invariants(Check(build(true))); vs[InvExecOnce] > 0 {
		t.Errorf("attempt 1 again after Stop interrupted it: %v, want no exec-once", vs)
	}
	if vs := invariants(Check(build(false))); vs[InvExecOnce] == 0 {
		t.Errorf("attempt 1 again after a cancel on an instance not stopped: %v, want exec-once", vs)
	}
}

// op records an operator's action on task id, begun at ms and answered at
// end.
func (h *history) op(act string, id int64, ms, end int, answer string) {
	h.in.Records = append(h.in.Records,
		Record{Kind: KindOperator, Ev: act + ":begin", At: h.at(ms), Inst: "operator", Task: id},
		Record{Kind: KindOperator, Ev: act, At: h.at(end), Inst: "operator", Task: id, Answer: answer})
}

// injected records that inst saw argo fail attempt of task id by injection
// at ms, and writes its history row.
func (h *history) injected(id int64, attempt int, inst string, ms int) {
	h.in.Records = append(h.in.Records, Record{Kind: KindInjected, At: h.at(ms), Inst: inst, Task: id, Attempt: attempt})
	h.in.Attempts = append(h.in.Attempts, AttemptRow{Task: id, Attempt: attempt, Outcome: runtime.OutcomeFailed, Worker: inst,
		Error: storage.InjectedFailurePrefix + " by an operator's transient-fail"})
}

// TestCheckTransientFail: an attempt failed by an operator's transient-fail
// request must follow a request, one each, with no function start under
// its number; a call that ran out of attempts that way may end dead.
func TestCheckTransientFail(t *testing.T) {
	clean := func(h *history) {
		h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 2, 0, nil)
		h.op(ActTransientFail, 1, 5, 8, "ok")
		h.injected(1, 1, "w0.0", 10)
		h.exec(1, 2, "w1.0", 40, 50, OutOK)
		h.call("0-1-0", 2, TaskOnce, runtime.StateDead, 1, 0, nil) // its only attempt failed by injection
		h.op(ActTransientFail, 2, 5, 8, "ok")
		h.injected(2, 1, "w1.0", 12)
		h.in.TransientTrail = map[int64]int{1: 1, 2: 1}
	}
	h := newHistory()
	clean(h)
	if vs := Check(h.in); len(vs) > 0 {
		t.Fatalf("a clean history has violations: %+v", vs)
	}
	cases := map[string]func(h *history){
		"more injected than requests": func(h *history) {
			h.injected(1, 2, "w1.0", 30) // and attempt 2 failed by injection too
			h.in.TransientTrail[1] = 2   // even if the trail agreed
		},
		"more injected than the trail": func(h *history) {
			h.op(ActTransientFail, 1, 20, 22, "error") // a request whose answer was lost
			h.injected(1, 2, "w1.0", 30)
		},
		"injected before the request": func(h *history) {
			h.in.Records[len(h.in.Records)-1].At = h.at(1) // the worker's record of task 2's injection
		},
		"the function ran": func(h *history) {
			h.exec(2, 1, "w1.0", 11, 12, OutFail)
		},
		"no worker record": func(h *history) {
			h.in.Records = h.in.Records[:len(h.in.Records)-1]
		},
		"the trail lost a request": func(h *history) {
			delete(h.in.TransientTrail, 2)
		},
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHistory()
			clean(h)
			mod(h)
			if got := invariants(Check(h.in)); got[InvTransientFail] == 0 {
				t.Errorf("invariant %s did not fire; violations: %v", InvTransientFail, got)
			}
		})
	}
	t.Run("undone run before", func(t *testing.T) {
		h := newHistory()
		clean(h)
		h.in.Stopped = map[string]bool{"w0.9": true}
		h.exec(2, 1, "w0.9", 2, 6, OutCancelled) // given back at Stop, then injected under its number
		if vs := Check(h.in); len(vs) > 0 {
			t.Fatalf("violations: %+v", vs)
		}
	})
}

// TestCheckForceFail: a force-failed task starts nothing after the action
// (a fallback neither), and no attempt of it runs throughout the action
// (force-fail refuses a task a worker holds).
func TestCheckForceFail(t *testing.T) {
	clean := func(h *history) {
		h.call("0-0-0", 1, TaskFallback, runtime.StateDead, 2, 0, nil)
		h.exec(1, 1, "w0.0", 10, 20, OutFail)
		h.exec(1, 2, "w0.0", 30, 40, OutFail)
		h.op(ActForceFail, 1, 45, 50, "ok") // exhausted, before its fallback
	}
	h := newHistory()
	clean(h)
	if vs := Check(h.in); len(vs) > 0 {
		t.Fatalf("a clean history has violations: %+v", vs)
	}
	cases := map[string]func(h *history){
		"fallback after": func(h *history) {
			h.in.Records = append(h.in.Records,
				Record{Kind: KindExec, Ev: "start", At: h.at(60), Inst: "w1.0", Task: 1, Attempt: 2, Fallback: true, Op: "0-0-0", Sum: Sum(h.args["0-0-0"])},
				Record{Kind: KindExec, Ev: "end", At: h.at(61), Inst: "w1.0", Task: 1, Attempt: 2, Fallback: true, Op: "0-0-0", Out: OutOK})
		},
		"running throughout": func(h *history) {
			h.in.Records = h.in.Records[:len(h.in.Records)-4] // attempt 2 runs from 30 to 70: across the force-fail
			h.exec(1, 2, "w0.0", 30, 70, OutFail)
			h.op(ActForceFail, 1, 45, 50, "ok")
		},
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHistory()
			clean(h)
			mod(h)
			if got := invariants(Check(h.in)); got[InvOperator] == 0 {
				t.Errorf("invariant %s did not fire; violations: %v", InvOperator, got)
			}
		})
	}
}

// TestCheckCancel: after a cancel the attempt it found running (recorded
// cancelled) may run on, and may even start (claimed before the cancel, its
// function not started yet), but must end within CancelBound; no later
// attempt and no fallback starts; the task ends discarded.
func TestCheckCancel(t *testing.T) {
	clean := func(h *history) {
		h.call("0-0-0", 1, TaskFallback, runtime.StateDiscarded, 2, 0, nil)
		h.exec(1, 1, "w0.0", 10, 20, OutFail)
		h.exec(1, 2, "w0.0", 30, 900, OutCancelled) // running at the cancel, stopped by the renewal
		h.op(ActCancel, 1, 40, 50, "ok")
		h.in.Attempts = append(h.in.Attempts, AttemptRow{Task: 1, Attempt: 2, Outcome: runtime.OutcomeCancelled, Worker: "w0.0"})
	}
	h := newHistory()
	clean(h)
	if vs := Check(h.in); len(vs) > 0 {
		t.Fatalf("a clean history has violations: %+v", vs)
	}
	h = newHistory()
	h.call("0-0-0", 1, TaskPlain, runtime.StateDiscarded, 1, 0, nil)
	h.op(ActCancel, 1, 5, 10, "ok")
	h.exec(1, 1, "w0.0", 12, 500, OutCancelled) // claimed before the cancel, started after it
	h.in.Attempts = append(h.in.Attempts, AttemptRow{Task: 1, Attempt: 1, Outcome: runtime.OutcomeCancelled, Worker: "w0.0"})
	if vs := Check(h.in); len(vs) > 0 {
		t.Fatalf("the claimed attempt starting after the cancel and ending in time has violations: %+v", vs)
	}
	cases := map[string]func(h *history){
		"fallback after": func(h *history) {
			h.in.Records = append(h.in.Records,
				Record{Kind: KindExec, Ev: "start", At: h.at(960), Inst: "w1.0", Task: 1, Attempt: 2, Fallback: true, Op: "0-0-0", Sum: Sum(h.args["0-0-0"])},
				Record{Kind: KindExec, Ev: "end", At: h.at(961), Inst: "w1.0", Task: 1, Attempt: 2, Fallback: true, Op: "0-0-0", Out: OutOK})
		},
		"ran past the bound": func(h *history) {
			h.in.Records = h.in.Records[:len(h.in.Records)-4] // attempt 2 ends 10 s after the cancel
			h.exec(1, 2, "w0.0", 30, 10050, OutCancelled)
			h.op(ActCancel, 1, 40, 50, "ok")
		},
		"not discarded": func(h *history) {
			h.in.Rows[0].State = runtime.StateDead
		},
	}
	for name, mod := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHistory()
			clean(h)
			mod(h)
			if got := invariants(Check(h.in)); got[InvCancel] == 0 {
				t.Errorf("invariant %s did not fire; violations: %v", InvCancel, got)
			}
		})
	}
}

// With the crypt feature, rows stored encrypted (OpenRow decrypts them)
// and rows of other names in clear are a clean history; a ciphertext
// moved to a row of another name does not decrypt there (crypt-at-rest,
// and args-exact).
func TestCheckCrypt(t *testing.T) {
	h := newHistory()
	h.in.Crypt = true
	seal := func(_ *Record, r *Row) {
		p, err := runtime.SealArguments(CryptCipher(1, ""), r.Name, "", r.Param)
		if err != nil {
			t.Fatal(err)
		}
		r.Param = []byte(p)
		OpenRow(r, "")
	}
	h.call("0-0-0", 1, TaskPlain, runtime.StateSucceeded, 1, 0, seal)
	h.exec(1, 1, "w0.0", 10, 20, OutOK)
	h.call("0-1-0", 2, TaskOnce, runtime.StateSucceeded, 1, 0, nil)
	h.exec(2, 1, "w0.0", 10, 20, OutOK)
	if h.in.Rows[0].KeyID != "fc-k2" {
		t.Fatalf("row 1 key %q, want fc-k2", h.in.Rows[0].KeyID)
	}
	if vs := Check(h.in); len(vs) > 0 {
		t.Fatalf("a clean history has violations: %+v", vs)
	}
	h.call("0-2-0", 3, TaskSync, runtime.StateSucceeded, 1, 0, func(_ *Record, r *Row) {
		p, _ := runtime.SealArguments(CryptCipher(0, ""), TaskPlain, "", r.Param) // sealed for another name
		r.Param = []byte(p)
		OpenRow(r, "")
	})
	h.exec(3, 1, "w0.0", 10, 20, OutOK)
	if got := invariants(Check(h.in)); got[InvCrypt] == 0 || got[InvArgsExact] == 0 {
		t.Fatalf("a ciphertext of another name: violations %v, want crypt-at-rest and args-exact", got)
	}
}

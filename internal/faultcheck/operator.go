package faultcheck

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/argo-retry/argo/runtime"
)

// The operator (feature "operator"): at seeded moments it acts on tasks
// the way a person at argoctl or the console does, and records each action
// and its answer in its own history (operator.hist), so that the checker
// knows which final states and starts an action allows.

// Operator actions (Record.Ev of KindOperator records).
const (
	ActDiscard   = "discard"        // Inspector.Discard of a pending, retrying or blocked task
	ActReviewed  = "discard-review" // RequestDiscard by one operator, ApproveDiscard by another
	ActForceFail = "force-fail"     // Inspector.ForceFail of a pending, blocked, retrying or exhausted task
	ActRunNow    = "run-now"        // Inspector.RunNow of a scheduled (pending, due later) task
	ActRequeue   = "requeue"        // Inspector.RequeueAsNew of a dead or discarded task (Record.ID: the new task)
	ActCancel    = "cancel"         // Inspector.Cancel of a running (half the time) or a pending, retrying, exhausted or blocked task
	// ActBlockedRequeue is Inspector.Discard of a blocked task (its
	// upstream task still unfinished), then at once Inspector.RequeueAsNew
	// of it: the new task must keep the old one's dependencies (#22 break 5).
	// Recorded as an ActDiscard and an ActRequeue of the task, each with its
	// answer.
	ActBlockedRequeue = "discard-blocked-requeue"
	// ActTransientFail is Inspector.TransientFail of a pending, running or
	// retrying task (a third of the time twice): its next attempt fails as
	// transient without calling the function if the worker of slot
	// InjectSlot takes it (it runs with Config.FaultInjection).
	ActTransientFail = "transient-fail"
	ActBreakerOpen   = "breaker-open"  // Inspector.OpenBreaker of the capped group
	ActBreakerClose  = "breaker-close" // Inspector.CloseBreaker of the capped group
)

// InjectSlot is the slot whose worker runs with Config.FaultInjection
// under the operator feature (the others leave the requests waiting, so
// that both behaviours are in every run). An attempt whose read of the
// requests was not answered before its lease ended was charged
// lease_expired unrun (MariaDB seed 6702196171921: 5 in one run); it is now
// given back undone (runtime TestFaultInjectionReadUnansweredBeforeLeaseLapses),
// and charged-unrun excuses nothing on this worker.
const InjectSlot = 0

// KindOperator is the kind of an operator's records.
const KindOperator = "operator"

// Operator acts on a database through two Inspectors (two people, for
// the reviewed discard).
type Operator struct {
	db       *sql.DB
	in, peer *runtime.Inspector
	h        *Writer
	r        *rand.Rand
	open     bool // the capped group's breaker, as this operator left it
	// Crypt: also rekey (FeatureCrypt, crypt.go), drawn from cr, a stream
	// of its own, so that the other actions are the seed's either way.
	Crypt bool
	cr    *rand.Rand
}

// NewOperator returns the operator of a run with seed, writing its history
// to h.
func NewOperator(db *sql.DB, dialect string, seed uint64, h *Writer) *Operator {
	in, peer := runtime.NewInspector(db, dialect), runtime.NewInspector(db, dialect)
	in.Operator, peer.Operator = "faultcheck-alice", "faultcheck-bob"
	// alice discards alone (a team that turned review off) and also asks
	// for reviewed discards, which bob approves from the same database
	// account (one checker process, as the console's operators share one).
	in.SingleOperatorDiscard, peer.SameAccountApproval = true, true
	return &Operator{db: db, in: in, peer: peer, h: h, r: rand.New(rand.NewPCG(seed, 0x09e7a)), cr: rand.New(rand.NewPCG(seed, 0xc7e))}
}

// Pause is the seeded wait before the next action.
func (o *Operator) Pause() time.Duration { return time.Duration(300+o.r.IntN(1200)) * time.Millisecond }

// pick returns one of up to 30 most recent tasks matching where, or 0.
func (o *Operator) pick(ctx context.Context, where string, args ...any) (int64, error) {
	rows, err := o.db.QueryContext(ctx, "SELECT id FROM argo_task WHERE "+where+" ORDER BY id DESC LIMIT 30", args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return 0, err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return 0, err
	}
	return ids[o.r.IntN(len(ids))], nil
}

// Act carries out one seeded action (a breaker left open is closed by the
// next action on it, or by Close).
func (o *Operator) Act(ctx context.Context) {
	if o.Crypt && o.cr.IntN(5) == 0 {
		o.rekey(ctx) // crypt.go
	}
	x := o.r.IntN(100)
	if o.open || x < 8 {
		o.breaker(ctx, !o.open)
		return
	}
	var act, where string
	var args []any
	switch {
	case x < 16:
		act, where, args = ActCancel, "task_status = ?", []any{runtime.StateRunning}
		if o.r.IntN(2) == 0 {
			where, args = "task_status IN (?, ?, ?, ?)", []any{runtime.StatePending, runtime.StateRetrying, runtime.StateExhausted, runtime.StateBlocked}
		}
	case x < 28:
		act, where, args = ActDiscard, "task_status IN (?, ?, ?)", []any{runtime.StatePending, runtime.StateRetrying, runtime.StateBlocked}
	case x < 40:
		act, where, args = ActReviewed, "task_status IN (?, ?)", []any{runtime.StatePending, runtime.StateRetrying}
	case x < 54:
		act, where, args = ActForceFail, "task_status IN (?, ?, ?, ?)", []any{runtime.StatePending, runtime.StateBlocked, runtime.StateRetrying, runtime.StateExhausted}
	case x < 66:
		act, where, args = ActRunNow, "task_status = ? AND execute_time > ?", []any{runtime.StatePending, time.Now().Add(200 * time.Millisecond).UnixMilli()}
	case x < 78:
		act, where, args = ActTransientFail, "task_status IN (?, ?, ?)", []any{runtime.StatePending, runtime.StateRunning, runtime.StateRetrying}
	case x < 90:
		act, where, args = ActBlockedRequeue, "task_status = ?", []any{runtime.StateBlocked}
	default:
		act, where, args = ActRequeue, "task_status IN (?, ?) AND requeued_to IS NULL", []any{runtime.StateDead, runtime.StateDiscarded}
	}
	id, err := o.pick(ctx, where, args...)
	if err != nil || id == 0 {
		return
	}
	if act == ActBlockedRequeue {
		if o.do(ctx, ActDiscard, id) == nil {
			o.do(ctx, ActRequeue, id)
		}
		return
	}
	if act == ActTransientFail && o.r.IntN(3) == 0 {
		if o.do(ctx, act, id) == nil {
			o.do(ctx, act, id) // two requests: two attempts fail
		}
		return
	}
	o.do(ctx, act, id)
}

// do carries out act on task id and records it and its answer.
func (o *Operator) do(ctx context.Context, act string, id int64) error {
	o.h.Write(Record{Kind: KindOperator, Ev: act + ":begin", Task: id})
	var err error
	var newID int64
	switch act {
	case ActDiscard:
		err = o.in.Discard(ctx, id, "faultcheck")
	case ActReviewed:
		if _, err = o.in.RequestDiscard(ctx, id, "faultcheck review"); err == nil {
			err = o.peer.ApproveDiscard(ctx, id, "approved")
		}
	case ActForceFail:
		err = o.in.ForceFail(ctx, id, "faultcheck")
	case ActCancel:
		_, err = o.in.Cancel(ctx, id, "faultcheck")
	case ActRunNow:
		err = o.in.RunNow(ctx, id, "faultcheck")
	case ActTransientFail:
		err = o.in.TransientFail(ctx, id, "faultcheck")
	case ActRequeue:
		newID, err = o.in.RequeueAsNew(ctx, id, "faultcheck")
	}
	r := Record{Kind: KindOperator, Ev: act, Task: id, ID: newID, Answer: "ok"}
	if err != nil {
		r.Answer, r.Err = "refused", err.Error()
		var te *runtime.TransitionError
		if !errors.As(err, &te) && !errors.Is(err, runtime.ErrTransitionInvalid) {
			r.Answer = "error"
		}
	}
	o.h.Write(r)
	return err
}

// breaker opens or closes the capped group's breaker.
func (o *Operator) breaker(ctx context.Context, open bool) {
	act := ActBreakerClose
	if open {
		act = ActBreakerOpen
	}
	o.h.Write(Record{Kind: KindOperator, Ev: act + ":begin"})
	var err error
	if open {
		err = o.in.OpenBreaker(ctx, "fc-cap", "faultcheck")
	} else {
		err = o.in.CloseBreaker(ctx, "fc-cap", "faultcheck")
	}
	r := Record{Kind: KindOperator, Ev: act, Answer: "ok"}
	if err != nil {
		r.Answer, r.Err = "error", err.Error()
	} else {
		o.open = open
	}
	o.h.Write(r)
}

// Close closes the breaker if this operator left it open.
func (o *Operator) Close(ctx context.Context) error {
	if !o.open {
		return nil
	}
	o.breaker(ctx, false)
	if o.open {
		return fmt.Errorf("faultcheck: the capped group's breaker could not be closed")
	}
	return nil
}

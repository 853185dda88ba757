package main

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/argo-retry/argo/internal/faultcheck"
	"github.com/argo-retry/argo/runtime"
)

// submitTimeout is a caller's deadline for one submit: above the 5 s floor
// of the ambiguous-INSERT resolution.
const submitTimeout = 10 * time.Second

// submitAll submits the slot's operations from -first-op until -submit-until.
func (w *worker) submitAll(ctx context.Context) {
	for k := w.c.firstOp; ; k++ {
		op := faultcheck.Generate(w.c.seed, w.c.slot, k, w.c.features)
		select {
		case <-ctx.Done():
			return
		case <-time.After(op.Pause):
		}
		if time.Now().After(w.c.until) {
			w.h.Write(faultcheck.Record{Kind: faultcheck.KindDone})
			return
		}
		w.do(ctx, op)
	}
}

// answer classifies a submit's error as the wrapper's caller sees it.
func answer(id int64, err error) (string, int64) {
	var ae *runtime.AttemptError
	switch {
	case err == nil:
		return faultcheck.AnswerNil, id
	case errors.As(err, &ae):
		return faultcheck.AnswerNil, id // persisted; a Sync first attempt failed
	case errors.Is(err, runtime.ErrDuplicate) && id != 0:
		return faultcheck.AnswerDuplicate, id
	case errors.Is(err, runtime.ErrDuplicateIDUnknown):
		return faultcheck.AnswerDuplicateNoID, 0
	case errors.Is(err, runtime.ErrNotPersisted):
		return faultcheck.AnswerNotPersisted, 0
	case errors.Is(err, runtime.ErrOutcomeUnknown):
		return faultcheck.AnswerUnknown, 0
	}
	return faultcheck.AnswerOther, id
}

// do submits the calls of op in order; a call whose upstream call has no
// known id (refused, unknown) is not submitted.
func (w *worker) do(ctx context.Context, op faultcheck.Operation) {
	ids := make([]int64, len(op.Calls))
	raws := make([][]byte, len(op.Calls))
	calls := make([]runtime.Call, len(op.Calls))
	recs := make([]faultcheck.Record, len(op.Calls))
	if len(op.Calls) == 1 && op.Calls[0].Big {
		w.big(op.Calls[0])
		return
	}
	for i, cs := range op.Calls {
		raw, _ := json.Marshal(cs.Args)
		raws[i] = raw
		calls[i] = runtime.Call{Task: w.defs[cs.Task], Args: raw, OrderKey: cs.OrderKey, Tenant: cs.Tenant}
		if cs.Unique {
			calls[i].UniqueKey = cs.Op
		}
		recs[i] = faultcheck.Record{Kind: faultcheck.KindSubmit, Ev: "begin", Op: cs.Op, Name: cs.Task, Sum: faultcheck.Sum(raw), Via: cs.Via,
			OrderKey: cs.OrderKey, Unique: calls[i].UniqueKey, Refuse: cs.Refuse}
		for _, j := range cs.After {
			recs[i].After = append(recs[i].After, op.Calls[j].Op)
		}
	}
	if len(op.Calls) > 0 && op.Calls[0].Via == faultcheck.ViaGroup {
		w.group(ctx, op, calls, recs)
		return
	}
	for i, cs := range op.Calls {
		c := calls[i]
		known := true
		for _, j := range cs.After {
			if ids[j] == 0 {
				known = false
			}
			c.After = append(c.After, ids[j])
		}
		if !known {
			return
		}
		if cs.Delay > 0 {
			time.Sleep(cs.Delay)
		}
		if cs.RunAfter > 0 {
			c.RunAt = time.Now().Add(cs.RunAfter)
			recs[i].RunAt = c.RunAt.UnixMicro()
		}
		w.h.Write(recs[i])
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), submitTimeout)
		if cs.Deadlock {
			sctx = w.injectDeadlock(sctx, cs.Op, c.After)
		}
		var ans, errText string
		var id int64
		switch cs.Via {
		case faultcheck.ViaTxCommit, faultcheck.ViaTxRollback:
			ans, id, errText = w.submitTx(sctx, c, cs)
		default:
			var err error
			id, err = w.rt.Submit(sctx, c)
			ans, id = answer(id, err)
			if err != nil {
				errText = err.Error()
			}
		}
		cancel()
		w.h.Write(faultcheck.Record{Kind: faultcheck.KindSubmit, Ev: "end", Op: cs.Op, Name: cs.Task, Via: cs.Via, Answer: ans, ID: id, Err: errText})
		if ans == faultcheck.AnswerNil || ans == faultcheck.AnswerDuplicate {
			ids[i] = id
		}
	}
}

// submitTx is SubmitTx in a transaction of the process's own, then the
// commit (after HoldTx) or a rollback.
func (w *worker) submitTx(ctx context.Context, c runtime.Call, cs faultcheck.CallSpec) (ans string, id int64, errText string) {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return faultcheck.AnswerNotPersisted, 0, "begin: " + err.Error()
	}
	id, err = w.rt.SubmitTx(ctx, tx, c)
	if err != nil {
		tx.Rollback()
		ans, id = answer(id, err)
		return ans, id, err.Error()
	}
	if cs.Via == faultcheck.ViaTxRollback {
		tx.Rollback()
		return faultcheck.AnswerRolledBack, 0, ""
	}
	if cs.HoldTx > 0 {
		time.Sleep(cs.HoldTx)
	}
	if err := tx.Commit(); err != nil {
		// The COMMIT's answer may be lost with the transaction committed.
		return faultcheck.AnswerUnknown, 0, "commit: " + err.Error()
	}
	return faultcheck.AnswerNil, id, ""
}

// group submits op's calls as one SubmitGroup.
func (w *worker) group(ctx context.Context, op faultcheck.Operation, calls []runtime.Call, recs []faultcheck.Record) {
	gcs := make([]runtime.GroupCall, len(calls))
	for i, c := range calls {
		gcs[i] = runtime.GroupCall{Call: c, AfterCalls: op.Calls[i].After}
		w.h.Write(recs[i])
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), submitTimeout)
	ids, err := w.rt.SubmitGroup(sctx, gcs)
	cancel()
	for i, cs := range op.Calls {
		var id int64
		if i < len(ids) {
			id = ids[i]
		}
		ans, id := answer(id, err)
		r := faultcheck.Record{Kind: faultcheck.KindSubmit, Ev: "end", Op: cs.Op, Name: cs.Task, Via: cs.Via, Answer: ans, ID: id}
		if err != nil {
			r.Err = err.Error()
		}
		w.h.Write(r)
	}
}

// big submits cs with BigBlob bytes and context.Background, as a caller
// without a deadline would, in a goroutine of its own, by SubmitTx on a
// connection of its own straight to the server (-direct-dsn): a submit
// that never returns shows in the history as one never answered, and as
// one still waiting after faultcheck.BigAnswerWithin (#22 break 7).
func (w *worker) big(cs faultcheck.CallSpec) {
	cs.Args.Blob = make([]byte, faultcheck.BigBlob)
	for i := range cs.Args.Blob {
		cs.Args.Blob[i] = byte(i*7 + i>>9)
	}
	raw, _ := json.Marshal(cs.Args)
	c := runtime.Call{Task: w.defs[cs.Task], Args: raw}
	w.h.Write(faultcheck.Record{Kind: faultcheck.KindSubmit, Ev: "begin", Op: cs.Op, Name: cs.Task, Sum: faultcheck.Sum(raw), Via: "big"})
	answered := make(chan struct{})
	go func() {
		select {
		case <-answered:
		case <-time.After(faultcheck.BigAnswerWithin):
			w.h.Write(faultcheck.Record{Kind: faultcheck.KindSubmit, Ev: "waiting", Op: cs.Op, Name: cs.Task, Via: "big"})
		}
	}()
	w.bigs.Add(1)
	go func() {
		defer w.bigs.Done()
		defer close(answered)
		var db runtime.Execer = w.db
		if w.c.directDSN != "" {
			direct, _, err := runtime.OpenDB(w.c.directDSN)
			if err != nil {
				w.h.Write(faultcheck.Record{Kind: faultcheck.KindSubmit, Ev: "end", Op: cs.Op, Name: cs.Task, Via: "big", Answer: faultcheck.AnswerNotPersisted, Err: "open: " + err.Error()})
				return
			}
			defer direct.Close()
			db = direct
		}
		id, err := w.rt.SubmitTx(context.Background(), db, c)
		ans, id := answer(id, err)
		r := faultcheck.Record{Kind: faultcheck.KindSubmit, Ev: "end", Op: cs.Op, Name: cs.Task, Via: "big", Answer: ans, ID: id}
		if err != nil {
			r.Err = err.Error()
		}
		w.h.Write(r)
	}()
}

// waitBigs waits, at most d, for the big submits still in flight.
func (w *worker) waitBigs(d time.Duration) {
	done := make(chan struct{})
	go func() { w.bigs.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

package runtime

import (
	"context"
	"errors"
	"time"
)

// finishResolveTimeout bounds the settling of one outcome write whose answer
// was lost, done at once on the attempt's goroutine (record); if the
// database cannot tell by then, record's background retry takes over.
const finishResolveTimeout = 5 * time.Second

// settleFinish resolves a finish whose write failed with its outcome
// unknown: it writes it again (fenced, so harmless if the first landed)
// and, if the fence no longer holds, reads back whether the first write
// landed. known is false when the database could not tell.
func (rt *Runtime) settleFinish(f finishing) (landed, known bool) {
	ctx, cancel := context.WithTimeout(context.Background(), finishResolveTimeout)
	defer cancel()
	err := rt.store.Finish(ctx, f, toMillis(rt.now()))
	switch {
	case err == nil:
		return true, true
	case errors.Is(err, ErrLeaseLost):
		landed, rerr := rt.store.FinishLanded(ctx, f)
		return landed, rerr == nil
	}
	return false, false
}

package storage

import (
	"context"
	"fmt"
)

// Transactions of argo's own that write task rows (a group submit:
// InsertDependent; a requeue: RequeueAsNew) and whose COMMIT failed with
// its outcome unknown (the connection dropped, the server died, ctx ended
// after the COMMIT was sent) are resolved by their rows' submit tokens,
// never guessed: the rows of one transaction are all there or none is.

// resolveCommit reads, after a COMMIT that failed with its outcome unknown
// (last), the ids of the rows the transaction wrote with tokens: the ids if
// it was committed; nil and last if it was not (nothing written). While
// the database cannot be reached it tries again until ctx's deadline, and
// for at least SubmitResolveFloor, then returns *UnresolvedError.
func (s *Store) resolveCommit(ctx context.Context, tokens [][]byte, last error) ([]int64, error) {
	rctx, cancel := ResolveContext(ctx, SubmitResolveFloor)
	defer cancel()
	cause := last
	for try := 1; ; try++ {
		if try > 1 && !sleepCtx(rctx, lockBackoff(try)) {
			return nil, &UnresolvedError{Last: cause}
		}
		ids, err := s.committedTokenIDs(rctx, tokens)
		switch {
		case err == nil && ids == nil:
			return nil, last // not written
		case err == nil:
			return ids, nil
		case rctx.Err() != nil:
			return nil, &UnresolvedError{Last: lastCause(err, cause)}
		}
		cause = err
	}
}

// committedTokenIDs reads the ids of the rows written with tokens in one
// transaction: nil if the first is not there; an error if only some are.
func (s *Store) committedTokenIDs(ctx context.Context, tokens [][]byte) ([]int64, error) {
	ids := make([]int64, len(tokens))
	for i, tok := range tokens {
		id, err := s.SubmitTokenID(ctx, tok)
		if err != nil {
			return nil, err
		}
		if id == 0 {
			if i == 0 {
				return nil, nil
			}
			return nil, fmt.Errorf("argo: row %d of a transaction is missing although its row 0 was written", i)
		}
		ids[i] = id
	}
	return ids, nil
}

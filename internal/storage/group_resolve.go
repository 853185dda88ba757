package storage

import (
	"context"
	"fmt"
)

// resolveGroup settles InsertDependent's transaction whose COMMIT failed
// with its outcome unknown (last): the rows of one transaction are all
// there or none is, so the first row's submit token tells which. If it is
// there, every row's id is read by its token (nil); if not, the COMMIT did
// not land and last is returned (nothing written). While the database
// cannot be reached it tries again until ctx's deadline, and for at least
// SubmitResolveFloor, then returns *UnresolvedError.
func (s *Store) resolveGroup(ctx context.Context, tasks []DependentTask, tokens [][]byte, last error) error {
	rctx, cancel := ResolveContext(ctx, SubmitResolveFloor)
	defer cancel()
	cause := last
	for try := 1; ; try++ {
		if try > 1 && !sleepCtx(rctx, lockBackoff(try)) {
			return &UnresolvedError{Last: cause}
		}
		ids, err := s.groupTokenIDs(rctx, tokens)
		switch {
		case err == nil && ids == nil:
			return last // not written
		case err == nil:
			for i, dt := range tasks {
				dt.Task.ID = ids[i]
			}
			return nil
		case rctx.Err() != nil:
			return &UnresolvedError{Last: lastCause(err, cause)}
		}
		cause = err
	}
}

// groupTokenIDs reads the ids of the rows written with tokens, all in one
// transaction: nil if the first is not there; an error if only some are.
func (s *Store) groupTokenIDs(ctx context.Context, tokens [][]byte) ([]int64, error) {
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
			return nil, fmt.Errorf("argo: row %d of a group submit is missing although row 0 was written in the same transaction", i)
		}
		ids[i] = id
	}
	return ids, nil
}

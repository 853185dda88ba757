package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/argo-retry/argo/argotype"
)

// ErrDuplicateIDUnknown: argotype.ErrDuplicateIDUnknown (the existing
// task is stored; its id could not be read back).
var ErrDuplicateIDUnknown = argotype.ErrDuplicateIDUnknown

// duplicateIDUnknown is ErrDuplicateIDUnknown with the last read's error
// (as text: it is the answer to the submit, not a question about its
// outcome) and what to do.
func duplicateIDUnknown(err error) error {
	return fmt.Errorf("%w: %v (nothing was written for this submit; submit again with the same unique key, which writes nothing, to get the existing task's id)", ErrDuplicateIDUnknown, err)
}

// errKeyInOwnTx is ErrDuplicate for an INSERT written through the caller's
// transaction (SubmitTx, a group's) whose unique key's row no read outside
// that transaction finds: the key is held by a row of the same transaction,
// not committed yet (two calls of it with one key). There is no id to
// give: that row is rolled back or committed with the transaction.
var errKeyInOwnTx = fmt.Errorf("%w (held by a row of this same transaction, not committed yet: two calls of one transaction or group use the key; give each its own)", ErrDuplicate)

// errTokenIDUnread is an INSERT refused as a duplicate whose submit token's
// row could not be read (idReadTries reads broke): the clash may be this
// very submit's row (a run of the INSERT whose answer was lost), or, for a
// task with a unique key, another task's key. Its outcome is not known: the
// submit resolves it (ResolveInsert runs the INSERT again, which meets the
// duplicate and reads again), and answers nil with the id, ErrDuplicate
// with the id, or, if the database cannot be read until the caller's
// deadline, ErrOutcomeUnknown. It carries the read's error as text, so that
// no driver classifies it as a refusal that changed nothing.
var errTokenIDUnread = errors.New("argo: the INSERT met a duplicate, and the row of this submit's token could not be read to tell whose it is")

// idReadTries bounds the reads of a duplicate's id (its token's or its
// unique key's row) that break the connection mid-statement.
const idReadTries = 4

// readDuplicateID reads the id of a row the INSERT clashed with (query,
// args: a read by token or by unique key; sql.ErrNoRows when there is no
// such row). A read that fails (its connection broke mid-statement) is run
// again, after a short jittered wait, up to idReadTries reads in all and
// while ctx lasts (a read under an ended ctx is not sent, and the wait
// ends with ctx): the driver closes a broken connection, so the next read
// takes another one (an idle one checked alive first, or a new one).
func (s *Store) readDuplicateID(ctx context.Context, query string, args ...any) (int64, error) {
	for try := 1; ; try++ {
		var id int64
		err := s.db.GetContext(ctx, &id, query, args...)
		if err == nil || errors.Is(err, sql.ErrNoRows) || try >= idReadTries {
			return id, err
		}
		if !sleepCtx(ctx, lockBackoff(try+1)) {
			return 0, err
		}
	}
}

package mysqldriver

import (
	"context"
	"database/sql"
	"slices"

	"github.com/jmoiron/sqlx"

	"github.com/argo-retry/argo/internal/storage"
)

// The take of a keyed call (storage/order.go, migration 000015). The
// claim's candidate read is a plain consistent read, and MySQL hands out an
// id at the INSERT, not at the commit, so a keyed row can become visible
// after a later call of its key was taken. The take therefore re-checks the
// key under the key's row lock: in one READ COMMITTED transaction it locks
// the row of every key among the candidates (lockOrderKey, in key order, so
// two takes never wait for each other in a cycle), then per candidate, in
// id order, reads whether an earlier call of its key is unfinished or the
// key's holder has started and not ended (orderBusy: a fresh read, after
// the lock, of every take that committed before) — unless the candidate is
// the holder itself, retrying or exhausted, whose retries and fallback go on
// (it holds the key until it ends; were it held back behind an earlier call
// that became visible after it started, that call would wait for it and
// neither would ever start) — takes it with the
// ordinary fenced ClaimTake, and makes it the key's holder (setOrderHolder,
// which always changes the row: on Galera two takes of one key on two
// nodes conflict at certification, and the later is rolled back and run
// again). Calls without a key never come here: their take is unchanged.

var (
	orderStarted = storage.StateSet(storage.OrderStartedStates...)

	// lockOrderKey creates the key's row or X-locks it as it is.
	lockOrderKey = "INSERT INTO argo_order_lock (order_key, holder, takes) VALUES (?, 0, 0) ON DUPLICATE KEY UPDATE takes = takes"

	// orderHolder reads the key's holder: argument key.
	orderHolder = "SELECT holder FROM argo_order_lock WHERE order_key = ?"

	// orderBusy: arguments key, id, key, id.
	orderBusy = "SELECT EXISTS (SELECT 1 FROM argo_task ahead WHERE ahead.order_open = ? AND ahead.id < ?)" +
		" OR EXISTS (SELECT 1 FROM argo_order_lock l JOIN argo_task h ON h.id = l.holder WHERE l.order_key = ? AND l.holder <> ? AND h.task_status IN " + orderStarted + ")"

	// setOrderHolder: arguments holder, key.
	setOrderHolder = "UPDATE argo_order_lock SET holder = ?, takes = takes + 1 WHERE order_key = ?"
)

func init() {
	statements.SchemaProbes = append(statements.SchemaProbes, storage.SchemaProbe{Migration: "000015_order_lock.up.sql", Query: "SELECT order_key, holder, takes FROM argo_order_lock WHERE 1=0"})
}

// splitKeyed splits byID into the candidates without an order key and those
// with one, each still in id order.
func splitKeyed(byID []*storage.Task) (plain, keyed []*storage.Task) {
	for _, t := range byID {
		if t.OrderKey.Valid {
			keyed = append(keyed, t)
		} else {
			plain = append(plain, t)
		}
	}
	return plain, keyed
}

// takeKeyed takes the keyed candidates byID (in id order) still as read
// whose key is free (see above), and returns them.
func (d *Driver) takeKeyed(ctx context.Context, conn storage.Conn, owner string, now, dueBy, leaseUntil storage.Millis, byID []*storage.Task) ([]*storage.Task, error) {
	var keys []string
	for _, t := range byID {
		keys = append(keys, t.OrderKey.String)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var took []*storage.Task
	err := conn.Write(ctx, sql.LevelReadCommitted, func(tx *sqlx.Tx) error {
		took = took[:0]
		for _, k := range keys {
			if _, err := tx.ExecContext(ctx, lockOrderKey, k); err != nil {
				return err
			}
		}
		for _, t := range byID {
			k := t.OrderKey.String
			var holder int64
			if err := tx.GetContext(ctx, &holder, orderHolder, k); err != nil {
				return err
			}
			// The key's holder goes on to its retries and fallback (it
			// holds the key until it ends); any other call waits until no
			// earlier call of the key is unfinished and the holder has ended.
			if holder != t.ID || !slices.Contains(storage.OrderStartedStates, t.State) {
				var busy bool
				if err := tx.GetContext(ctx, &busy, orderBusy, k, t.ID, k, t.ID); err != nil {
					return err
				}
				if busy {
					continue
				}
			}
			res, err := tx.ExecContext(ctx, ClaimTake, owner, leaseUntil, now, t.ID, t.ShardKey, t.State, t.ExecuteTimes, dueBy, now)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				if err != nil {
					return err
				}
				continue // changed since it was read: another claimer's
			}
			if _, err := tx.ExecContext(ctx, setOrderHolder, t.ID, k); err != nil {
				return err
			}
			took = append(took, t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return took, nil
}

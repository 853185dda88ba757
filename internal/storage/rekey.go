package storage

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// Rekey (runtime.Inspector.Rekey, argoctl rekey) re-encrypts the arguments
// of rows encrypted under an old key. It walks argo_task in id order, one
// bounded batch a statement: a batch reads at most limit rows by the
// primary key, and returns the arguments of those whose task_parameter is
// encrypted (starts with encryptedPattern's prefix); the others come back
// with an empty Parameter. Each rewrite is fenced on the arguments read: it
// sets task_parameter only where it still holds them, and touches no other
// column, so a row that changed meanwhile is left as it is (reported), and
// a running row is rewritten without disturbing its attempt (which holds
// its arguments in memory already) or its lease.

// encryptedPattern matches an encrypted task_parameter (runtime.EncryptedPrefix).
const encryptedPattern = "argo:enc:%"

const rekeyBatch = `SELECT id, shard_key, task_id, tenant, CASE WHEN task_parameter LIKE '` + encryptedPattern + `' THEN task_parameter ELSE '' END AS task_parameter
 FROM argo_task WHERE id > ? ORDER BY id LIMIT ?`

const rekeyRewrite = `UPDATE argo_task SET task_parameter = ? WHERE id = ? AND shard_key = ? AND task_parameter = ?`

// SealedRow is one row a rekey batch read.
type SealedRow struct {
	ID        int64  `db:"id"`
	Shard     int    `db:"shard_key"`
	Name      string `db:"task_id"`
	Tenant    string `db:"tenant"`
	Parameter string `db:"task_parameter"` // "" unless encrypted
}

// RekeyBatch reads the next batch of at most limit rows after id after,
// in id order. An empty batch is the end of the table.
func (s *Store) RekeyBatch(ctx context.Context, after int64, limit int) ([]SealedRow, error) {
	var rows []SealedRow
	err := s.db.SelectContext(ctx, &rows, rekeyBatch, after, limit)
	return rows, err
}

// Rewrite is one fenced rewrite of a row's arguments.
type Rewrite struct {
	ID       int64
	Shard    int // the row's shard_key (SealedRow.Shard)
	Old, New string
}

// RewriteParameters applies the rewrites in one transaction, each fenced on
// its Old arguments, and returns the ids of those that landed; the others
// found the row changed (or gone) and left it as it was.
func (s *Store) RewriteParameters(ctx context.Context, rw []Rewrite) ([]int64, error) {
	var done []int64
	err := s.write(ctx, func(tx *sqlx.Tx) error {
		done = done[:0]
		for _, r := range rw {
			res, err := tx.ExecContext(ctx, rekeyRewrite, r.New, r.ID, r.Shard, r.Old)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				done = append(done, r.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return done, nil
}

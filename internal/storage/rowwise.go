package storage

import "context"

// execRowwise runs one fenced single-row UPDATE (query, a statement by
// primary key) once per element of rows, in one transaction, and reports
// for each whether its statement changed a row: exactly the rows this call
// took, whatever ran at the same time (Driver.ExecRowwise). Callers pass
// rows in ascending id order, so that two such calls lock shared rows in
// the same order and do not deadlock each other.
func (s *Store) execRowwise(ctx context.Context, query string, rows [][]any) ([]bool, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	return s.d.ExecRowwise(ctx, conn{s}, query, rows)
}

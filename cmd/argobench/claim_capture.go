package main

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/argo-retry/argo/cmd/argobench/benchtask"
	"github.com/argo-retry/argo/cmd/argobench/internal/sqlcount"
	"github.com/argo-retry/argo/internal/storage/mysqldriver"
	"github.com/argo-retry/argo/internal/storage/sqlitedriver"
	"github.com/argo-retry/argo/runtime"
)

// The claim workload times argo's own claim statements, not a copy of them:
// captureClaim starts a runtime on a handle through the counting driver, lets
// it claim one due task, and keeps the statements it sent (text and
// arguments). Each timed claim sends those statements again, with their
// time arguments moved to the moment of the claim. The markers below pick
// the statements out; when one is not seen, the capture fails (an error,
// never a fallback to a copy), so a change to argo's claim cannot leave the
// bench timing an old one.
//
// The markers are the storage drivers' own statement text, not copies:
var (
	// MySQL: the candidate read, a plain SELECT in due order; its due
	// condition is in no other statement (mysqldriver.ClaimCandidates).
	markClaimRead = mysqldriver.ClaimDue
	// MySQL: the fenced UPDATE by primary key that takes one candidate,
	// whole: a captured take is exactly the driver's (mysqldriver.ClaimTake).
	markClaimTake = mysqldriver.ClaimTake
	// SQLite: the one claim statement, UPDATE … RETURNING in a BEGIN
	// IMMEDIATE transaction; its due condition is in no other statement
	// (sqlitedriver.Claim).
	markClaimSQLite = sqlitedriver.ClaimDue
)

const (
	// claimTakeFence is the per-row fence of the captured take: the row is
	// still as read (id and its shard key, state, attempts), then the rest
	// of its WHERE (still due, not leased).
	claimTakeFence = " WHERE id = ? AND shard_key = ? AND task_status = ? AND execute_times = ? AND "
	// claimTakeFenceArgs is how many arguments claimTakeFence takes.
	claimTakeFenceArgs = 4
)

// argoClaim is argo's claim as a running runtime sent it.
type argoClaim struct {
	// read is, on MySQL, the candidate read; on SQLite, the whole claim.
	read *sqlcount.Statement
	// take is, on MySQL, the fenced UPDATE of one candidate; nil on SQLite.
	take *sqlcount.Statement
	// takeHead is take's text before claimTakeFence (UPDATE … SET …) and
	// takeTail its text after; takeSetArgs counts the SET clause's arguments.
	takeHead, takeTail string
	takeSetArgs        int
	// at is the runtime's clock (Unix ms) in the captured arguments: each
	// argument within a day of it is a time, moved by (now - at) when sent.
	at int64
	// multi, on MySQL, is a multi-statement pool with the settings of
	// argo's own (runtime/onetrip_open.go openOnetrip), or nil where argo has none
	// (arguments not interpolated client-side) and takes candidates in a
	// transaction instead.
	multi *sql.DB
}

func (c *argoClaim) close() {
	if c != nil && c.multi != nil {
		c.multi.Close()
	}
}

// claimMarkers returns the markers of argo's claim statements on dialect:
// on MySQL the candidate read and the take, on SQLite the one statement.
func claimMarkers(dialect string) []string {
	if dialect == runtime.DialectSQLite {
		return []string{markClaimSQLite}
	}
	return []string{markClaimRead, markClaimTake}
}

// captureClaim runs a real runtime through the counting driver and keeps
// the claim statements it sends (markers, as from claimMarkers), for the
// claim workload to time. It fails when a statement is not seen.
func (b *bencher) captureClaim(ctx context.Context, markers []string) (*argoClaim, error) {
	c := sqlcount.NewCounter()
	for _, m := range markers {
		c.Capture(m)
	}
	db, err := openCounted(b.dsn, c)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	_, _, work, _ := benchtask.Defs()
	row := newHandRow(work)
	now := time.Now()
	if _, err := b.admin.ExecContext(ctx, b.insertSQL(), row.values(argsJSON(0), now, statePending, 0, now.Add(-time.Second), "", 0)...); err != nil {
		return nil, err
	}
	benchtask.SetHooks(benchtask.Hooks{})
	obs := newDoneObserver("argobench.Work", 1)
	// No steal claims: they read only rows overdue by StealAfter, and a
	// replay of one (times moved to now) would find no due row.
	rt, err := b.startArgo(ctx, runtime.Config{DB: db, Dialect: b.dialect, Observer: obs, StealAfter: -1})
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = obs.wait(wctx)
	cancel()
	stopArgo(rt)
	if err != nil {
		return nil, fmt.Errorf("capturing argo's claim: %w", err)
	}
	var got []*sqlcount.Statement
	for _, m := range markers {
		st := c.Captured(m)
		if st == nil {
			return nil, fmt.Errorf("capturing argo's claim: the runtime claimed a task but sent no statement containing %q: argo's claim SQL changed; update the markers in cmd/argobench/claim_capture.go", m)
		}
		got = append(got, st)
	}
	claim := &argoClaim{read: got[0]}
	if b.dialect == runtime.DialectMySQL {
		claim.take = got[1]
		head, tail, ok := strings.Cut(claim.take.Query, claimTakeFence)
		if !ok || !strings.HasPrefix(head, "UPDATE ") || !strings.Contains(head, " SET ") {
			return nil, fmt.Errorf("capturing argo's claim: its take %q is not UPDATE … SET …%s…: argo's claim changed; update cmd/argobench/claim_capture.go", claim.take.Query, claimTakeFence)
		}
		claim.takeHead, claim.takeTail, claim.takeSetArgs = head, tail, strings.Count(head, "?")
		if want := claim.takeSetArgs + claimTakeFenceArgs + strings.Count(tail, "?"); len(claim.take.Args) != want {
			return nil, fmt.Errorf("capturing argo's claim: its take has %d arguments, want %d", len(claim.take.Args), want)
		}
	}
	if err := claim.findClock(now); err != nil {
		return nil, err
	}
	if err := claim.checkLimit(); err != nil {
		return nil, err
	}
	if b.dialect == runtime.DialectMySQL {
		if claim.multi, err = b.openMulti(ctx); err != nil {
			return nil, err
		}
	}
	how := "one UPDATE … RETURNING"
	switch {
	case b.dialect == runtime.DialectSQLite:
	case claim.multi != nil:
		how = "its candidate read, then its per-row fence applied to every candidate in one multi-statement UPDATE + COMMIT, as argo's multi-statement pool sends it (that pool bypasses the counting driver, so the bench sends the driver's own statement, mysqldriver.TakeAllQuery)"
	default:
		how = "its candidate read, then its per-row fenced UPDATEs in one READ COMMITTED transaction (arguments not interpolated here: argo has no multi-statement pool)"
	}
	b.rep.Notes = append(b.rep.Notes, "claim: the timed argo claim is the statements a running argo sent, captured through the counting driver: "+how)
	if claim.take != nil {
		b.rep.Notes = append(b.rep.Notes, "claim: argo's captured per-row take: "+claim.take.Query,
			"claim: the hand-written MySQL claim: the read shown, then UPDATE … WHERE id IN (…) AND task_status = 0 (autocommit; if it changed fewer rows than read, a SELECT by its lease owner says which it took)")
	}
	return claim, nil
}

// findClock sets c.at: the smallest time argument of the captured read
// (the runtime's now, or its due-by bound, which equals it).
func (c *argoClaim) findClock(start time.Time) error {
	lo, hi := start.Add(-time.Hour).UnixMilli(), time.Now().Add(time.Hour).UnixMilli()
	for _, v := range c.read.Args {
		if n, ok := v.(int64); ok && n >= lo && n <= hi && (c.at == 0 || n < c.at) {
			c.at = n
		}
	}
	if c.at == 0 {
		return fmt.Errorf("capturing argo's claim: no time among the arguments of %q", c.read.Query)
	}
	return nil
}

// checkLimit checks that the read's last placeholder is its LIMIT ("LIMIT ?",
// or SQLite's "LIMIT +?").
func (c *argoClaim) checkLimit() error {
	q := c.read.Query
	i := strings.LastIndex(q, "?")
	if i < 0 || !strings.HasSuffix(strings.TrimRight(q[:i], " +"), "LIMIT") || len(c.read.Args) != strings.Count(q, "?") {
		return fmt.Errorf("capturing argo's claim: %q does not end its arguments with LIMIT ?", q)
	}
	return nil
}

// moved returns args with each time (within a day of c.at) moved to now.
func (c *argoClaim) moved(args []driver.Value, now int64) []any {
	out := make([]any, len(args))
	for i, v := range args {
		if n, ok := v.(int64); ok && n > c.at-86_400_000 && n < c.at+86_400_000 {
			v = n - c.at + now
		}
		out[i] = v
	}
	return out
}

// readArgs returns the read's arguments for a claim of limit rows at now.
func (c *argoClaim) readArgs(now int64, limit int) []any {
	args := c.moved(c.read.Args, now)
	args[len(args)-1] = limit
	return args
}

// candidate is a row the MySQL read returned, with the columns its fence checks.
type candidate struct {
	id, shard, state, attempts int64
}

// once runs one claim of limit rows at now on db (a handle with argo's
// connection settings) and returns how many rows it took. Every column of
// every row is read, as argo decodes whole tasks.
func (c *argoClaim) once(ctx context.Context, db *sql.DB, dialect string, limit int) (int, error) {
	now := time.Now().UnixMilli()
	if dialect == runtime.DialectSQLite {
		tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (runtime.OpenDB)
		if err != nil {
			return 0, err
		}
		defer tx.Rollback()
		rows, err := tx.QueryContext(ctx, c.read.Query, c.readArgs(now, limit)...)
		if err != nil {
			return 0, err
		}
		cands, err := scanCandidates(rows)
		if err != nil {
			return 0, err
		}
		return len(cands), tx.Commit()
	}
	rows, err := db.QueryContext(ctx, c.read.Query, c.readArgs(now, limit)...)
	if err != nil {
		return 0, err
	}
	cands, err := scanCandidates(rows)
	if err != nil || len(cands) == 0 {
		return 0, err
	}
	slices.SortFunc(cands, func(a, b candidate) int { return cmp.Compare(a.id, b.id) })
	if c.multi != nil {
		return c.takeMulti(ctx, cands, now)
	}
	return c.takeRowwise(ctx, db, cands, now)
}

// takeArgs returns the take's arguments for one candidate.
func (c *argoClaim) takeArgs(now int64, k candidate) []any {
	args := c.moved(c.take.Args, now)
	copy(args[c.takeSetArgs:], []any{k.id, k.shard, k.state, k.attempts})
	return args
}

// takeMulti takes every candidate with one UPDATE carrying each row's fence,
// in one multi-statement query on the multi-statement pool, then COMMIT: two
// round trips. The bench is the only claimer, so the UPDATE must change
// every candidate.
func (c *argoClaim) takeMulti(ctx context.Context, cands []candidate, now int64) (int, error) {
	one := c.moved(c.take.Args, now)
	var ids, shards, tuples []any
	for _, k := range cands {
		ids = append(ids, k.id)
		shards = append(shards, k.shard)
		tuples = append(tuples, k.id, k.state, k.attempts)
	}
	// The driver's one-trip take (argo's, not a copy); its arguments are
	// mysqldriver.TakeAllArgs's: the captured take's SET and due-by/now
	// arguments, moved to now, around the candidates' ids, shard keys and fences.
	q := mysqldriver.TakeAllQuery(len(cands))
	args := slices.Concat(one[:c.takeSetArgs], ids, shards, tuples, one[c.takeSetArgs+claimTakeFenceArgs:])
	conn, err := c.multi.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	// A connection left mid-transaction is discarded, which rolls it back.
	discard := func() { _ = conn.Raw(func(any) error { return driver.ErrBadConn }) }
	res, err := conn.ExecContext(ctx, q, args...)
	if err != nil {
		discard()
		return 0, err
	}
	n, err := res.RowsAffected() // of the last statement: the UPDATE
	if err != nil {
		discard()
		return 0, err
	}
	if n != int64(len(cands)) {
		discard()
		return 0, fmt.Errorf("argo's claim took %d of %d candidates with no other claimer", n, len(cands))
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		discard()
		return 0, err
	}
	return len(cands), nil
}

// takeRowwise takes each candidate with its own fenced UPDATE, in id order,
// in one READ COMMITTED transaction (argo's path without the pool).
func (c *argoClaim) takeRowwise(ctx context.Context, db *sql.DB, cands []candidate, now int64) (int, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	took := 0
	for _, k := range cands {
		res, err := tx.ExecContext(ctx, c.take.Query, c.takeArgs(now, k)...)
		if err != nil {
			return 0, err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		took += int(n)
	}
	if took != len(cands) {
		return 0, fmt.Errorf("argo's claim took %d of %d candidates with no other claimer", took, len(cands))
	}
	return took, tx.Commit()
}

// scanCandidates reads every column of every row and returns each row's id,
// task_status and execute_times.
func scanCandidates(rows *sql.Rows) ([]candidate, error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	at := map[string]int{}
	for i, name := range cols {
		at[strings.ToLower(name)] = i
	}
	for _, name := range []string{"id", "shard_key", "task_status", "execute_times"} {
		if _, ok := at[name]; !ok {
			return nil, fmt.Errorf("argo's claim returns no %s column", name)
		}
	}
	vals := make([]sql.NullInt64, 4)
	ptrs := make([]any, len(cols))
	for i := range ptrs {
		ptrs[i] = new(sql.RawBytes)
	}
	ptrs[at["id"]], ptrs[at["shard_key"]], ptrs[at["task_status"]], ptrs[at["execute_times"]] = &vals[0], &vals[1], &vals[2], &vals[3]
	var out []candidate
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, candidate{id: vals[0].Int64, shard: vals[1].Int64, state: vals[2].Int64, attempts: vals[3].Int64})
	}
	return out, rows.Err()
}

// openMulti opens a multi-statement pool on the bench's MySQL database with
// the settings argo gives its own (openOnetrip): arguments interpolated
// client-side, multiStatements on. It returns nil where argo has no such
// pool: the handle runtime.OpenDB makes does not interpolate arguments.
func (b *bencher) openMulti(ctx context.Context) (*sql.DB, error) {
	interpolates, err := mysqlInterpolates(ctx, b.hand)
	if err != nil || !interpolates {
		return nil, err
	}
	name := strings.TrimPrefix(strings.TrimPrefix(b.dsn, "mysql:"), "//")
	sep := "?"
	if strings.Contains(name, "?") {
		sep = "&"
	}
	name += sep + "interpolateParams=true&multiStatements=true"
	db := sql.OpenDB(sqlcount.DSNConnector(b.hand.Driver(), name))
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, errors.Join(errors.New("opening a multi-statement pool like argo's"), err)
	}
	return db, nil
}

// Package costgate counts what one task costs the database — statements,
// round trips and commits — per workload and engine, and compares the
// counts with a committed baseline (testdata/cost_baseline.json). The test
// TestCostBaseline (in make test) fails when a count rises more than 5%
// above the baseline; counts are of the client's own requests, so a slow or
// loaded machine does not change them (docs/performance.md, "The cost gate").
//
// Two counters feed the same Counts: on SQLite sqlcount's database/sql driver
// wrapper sees each statement, BEGIN and COMMIT; on MySQL a dialer wrapper
// reads the client's side of the wire protocol, so it sees exactly what the
// server is sent — a multi-statement query (the one-trip path) is one round
// trip holding several statements.
package costgate

import (
	"sort"
	"strings"
	"sync"

	"github.com/argo-retry/argo/cmd/argobench/internal/sqlcount"
)

// Counts is what a Counter saw.
type Counts struct {
	// Statements are the SQL statements run, transaction control (BEGIN,
	// START TRANSACTION, COMMIT, ROLLBACK, SET TRANSACTION …) and
	// connection set-up (SET NAMES and other SETs) excluded.
	Statements int64
	// Trips are the requests the client waited on: on MySQL the command
	// packets (a query, however many statements it holds; a PREPARE; an
	// EXECUTE); on SQLite each statement, BEGIN, COMMIT and ROLLBACK.
	Trips int64
	// Commits are the transactions committed: each COMMIT, and each write
	// statement (INSERT, UPDATE, DELETE, REPLACE) run outside a transaction
	// (autocommit).
	Commits int64
	// Kinds counts statements by verb and table ("UPDATE argo_task"), and
	// "COMMIT", "ROLLBACK", "BEGIN", "SET TRANSACTION", "SET (connection)" — for
	// telling which statement a change added.
	Kinds map[string]int64
}

// Sub returns c minus before.
func (c Counts) Sub(before Counts) Counts {
	out := Counts{Statements: c.Statements - before.Statements, Trips: c.Trips - before.Trips, Commits: c.Commits - before.Commits, Kinds: map[string]int64{}}
	for k, v := range c.Kinds {
		if d := v - before.Kinds[k]; d != 0 {
			out.Kinds[k] = d
		}
	}
	return out
}

// KindList returns the kinds, most frequent first.
func (c Counts) KindList() []string {
	ks := make([]string, 0, len(c.Kinds))
	for k := range c.Kinds {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if c.Kinds[ks[i]] != c.Kinds[ks[j]] {
			return c.Kinds[ks[i]] > c.Kinds[ks[j]]
		}
		return ks[i] < ks[j]
	})
	return ks
}

// Counter accumulates Counts from any number of connections; safe for
// concurrent use.
type Counter struct {
	mu sync.Mutex
	c  Counts
	// Log, if set, receives every statement's text (for finding which
	// statement a count belongs to; -v in the test).
	Log func(kind, text string)
}

// NewCounter returns an empty Counter.
func NewCounter() *Counter { return &Counter{c: Counts{Kinds: map[string]int64{}}} }

// Snapshot returns a copy of the counts so far.
func (c *Counter) Snapshot() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.c
	out.Kinds = make(map[string]int64, len(c.c.Kinds))
	for k, v := range c.c.Kinds {
		out.Kinds[k] = v
	}
	return out
}

// session is one connection's view: whether a transaction is open.
type session struct {
	c    *Counter
	inTx bool
}

// trip counts one request.
func (s *session) trip() {
	s.c.mu.Lock()
	s.c.c.Trips++
	s.c.mu.Unlock()
}

// untrip takes back a trip counted for a request that turned out to be
// connection set-up.
func (s *session) untrip() {
	s.c.mu.Lock()
	s.c.c.Trips--
	s.c.mu.Unlock()
}

// statement counts one statement of text; it reports whether it was
// connection set-up (a SET other than SET TRANSACTION: SET NAMES and the
// DSN's variables at connect), which counts as nothing.
func (s *session) statement(text string) (setup bool) {
	kind := classify(text)
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	s.c.c.Kinds[kind]++
	if s.c.Log != nil {
		s.c.Log(kind, text)
	}
	switch kind {
	case "SET (connection)":
		return true
	case "SET TRANSACTION":
		// SET TRANSACTION ISOLATION LEVEL … before a BEGIN: transaction
		// control, a round trip of its own when sent alone.
	case "BEGIN":
		s.inTx = true
	case "COMMIT":
		s.inTx = false
		s.c.c.Commits++
	case "ROLLBACK":
		s.inTx = false
	default:
		s.c.c.Statements++
		if !s.inTx && isWrite(kind) {
			s.c.c.Commits++
		}
	}
	return false
}

// classify names a statement by its verb and first table, transaction
// control by one word.
func classify(text string) string {
	t := strings.TrimSpace(text)
	up := strings.ToUpper(t)
	switch {
	case strings.HasPrefix(up, "START TRANSACTION"), strings.HasPrefix(up, "BEGIN"):
		return "BEGIN"
	case strings.HasPrefix(up, "COMMIT"):
		return "COMMIT"
	case strings.HasPrefix(up, "ROLLBACK"):
		return "ROLLBACK"
	case strings.HasPrefix(up, "SET TRANSACTION"):
		return "SET TRANSACTION"
	case strings.HasPrefix(up, "SET "):
		// SET NAMES and the DSN's session variables, sent as a
		// connection opens.
		return "SET (connection)"
	}
	k := sqlcount.Classify(t)
	if f := strings.Fields(k); len(f) == 2 {
		k = f[0] + " " + strings.Trim(f[1], "`")
	}
	return k
}

func isWrite(kind string) bool {
	verb, _, _ := strings.Cut(kind, " ")
	switch verb {
	case "INSERT", "UPDATE", "DELETE", "REPLACE":
		return true
	}
	return false
}

// splitStatements splits a multi-statement query at the semicolons outside
// quotes and comments.
func splitStatements(q string) []string {
	var out []string
	start := 0
	var quote byte
	for i := 0; i < len(q); i++ {
		ch := q[i]
		if quote != 0 {
			switch {
			case ch == '\\' && quote != '`':
				i++
			case ch == quote:
				if i+1 < len(q) && q[i+1] == quote {
					i++
				} else {
					quote = 0
				}
			}
			continue
		}
		switch ch {
		case '\'', '"', '`':
			quote = ch
		case ';':
			if s := strings.TrimSpace(q[start:i]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(q[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

package mysqldriver

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
)

// On a Galera node argo sends no multi-statement query (the one-trip path:
// onetrip.go, rowwise.go, claim.go, flow_batch.go): a multi-statement
// transaction is not atomic there. When a write set replicated from
// another node aborts the transaction (a brute-force abort) between two of
// the query's statements, the server rolls back what ran so far and runs
// the statements left in autocommit mode, each committed on its own, and
// the final COMMIT, finding no transaction, answers OK. The client reads
// every statement's result as if the whole had committed. (MariaDB 10.11,
// Galera 4, two writers on two nodes each sending
// "START TRANSACTION; UPDATE own; UPDATE shared; UPDATE own; COMMIT" 3,000
// times: one node's first UPDATE landed 2,170 times, its last 2,190, and
// 2,187 answers said committed; the same statements sent one by one landed
// exactly as often as they were answered committed. In
// TestDiamondReleasedWhenUpstreamsFinishOnTwoNodes a finish answered
// committed was lost, once in a few hundred finishes on two nodes: the
// upstream task stayed running and its downstream task blocked.) Sent one
// by one, a statement after the abort is refused
// with the deadlock error and the transaction is run again. A Galera
// cluster behind one connection pool (the failover connector elects one
// writer) rarely aborts a local transaction, but instances may write
// through different nodes, so the probe alone decides.

// galeraProbe remembers whether the server is a Galera node (wsrep_on=ON),
// once a probe has answered. Every one-trip write asks it: the answer,
// once known, is one atomic load.
type galeraProbe struct {
	mu     sync.Mutex   // serialises probes
	answer atomic.Int32 // probeUnknown, probeNotGalera or probeGalera
}

const (
	probeUnknown int32 = iota
	probeNotGalera
	probeGalera
)

// onGalera reports whether db's server is a Galera node, asking it the
// first time (and again after a failed probe, which it returns).
func (p *galeraProbe) onGalera(ctx context.Context, db *sql.DB) (bool, error) {
	if a := p.answer.Load(); a != probeUnknown {
		return a == probeGalera, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if a := p.answer.Load(); a != probeUnknown {
		return a == probeGalera, nil
	}
	var name, value string
	// SHOW VARIABLES answers no row where the server has no wsrep (MySQL).
	err := db.QueryRowContext(ctx, "SHOW VARIABLES LIKE 'wsrep_on'").Scan(&name, &value)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	if value == "ON" {
		p.answer.Store(probeGalera)
		return true, nil
	}
	p.answer.Store(probeNotGalera)
	return false, nil
}

package mysqldriver

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// galeraProbe remembers whether the server is a Galera node (wsrep_on=ON),
// once a probe has answered.
type galeraProbe struct {
	mu     sync.Mutex
	known  bool
	galera bool
}

// onGalera reports whether db's server is a Galera node, asking it the
// first time (and again after a failed probe, which it returns).
func (p *galeraProbe) onGalera(ctx context.Context, db *sql.DB) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.known {
		return p.galera, nil
	}
	var name, value string
	// SHOW VARIABLES answers no row where the server has no wsrep (MySQL).
	err := db.QueryRowContext(ctx, "SHOW VARIABLES LIKE 'wsrep_on'").Scan(&name, &value)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	p.known, p.galera = true, value == "ON"
	return p.galera, nil
}

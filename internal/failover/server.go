package failover

import (
	"context"
	"database/sql/driver"
	"strings"
	"sync"
	"time"
)

// health is what the last check of a server said.
type health int

const (
	healthUnknown  health = iota // never checked
	healthUsable                 // up and writable
	healthUnusable               // down, read-only, or (Galera) not synced in the primary component
)

// server is one server of the list and what is known of it.
type server struct {
	addr           string
	connector      driver.Connector // the driver's, for this server alone
	connectTimeout time.Duration    // bound of one connection attempt
	password       string           // to hide from the reasons shown

	mu          sync.Mutex
	health      health
	reason      string    // why unusable
	usableSince time.Time // when it last became usable
	galera      bool      // the last check that ran found wsrep_on = ON
	rank        string    // Galera: galeraRank as of the last check that passed
	replacedBy  string    // plain MySQL: the server writes moved to when this one failed; never used again

	probe fullConn // the monitor's own connection; only the monitor touches it
}

// connect opens a driver connection to s, bounded by its connect timeout.
func (s *server) connect(ctx context.Context) (driver.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, s.connectTimeout)
	defer cancel() // the driver stops watching ctx once connected
	return s.connector.Connect(ctx)
}

func (s *server) usable() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.health == healthUsable
}

func (s *server) knownUnusable() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.health == healthUnusable
}

// usableFor reports how long s has been usable without a break (0 when it
// is not).
func (s *server) usableFor(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.health != healthUsable {
		return 0
	}
	return now.Sub(s.usableSince)
}

// setUnusable marks s unusable for why; it reports whether s was usable
// (or unknown) before.
func (s *server) setUnusable(why string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := s.health != healthUnusable
	s.health, s.reason = healthUnusable, why
	return changed
}

// setUsable marks s usable, as the check's report r says; it reports
// whether s was unusable before (a return, worth a log line).
func (s *server) setUsable(now time.Time, r report) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.galera, s.rank = r.galera, r.rank
	if s.health == healthUsable {
		return false
	}
	returned := s.health == healthUnusable
	s.health, s.reason, s.usableSince = healthUsable, "", now
	return returned
}

// noteGalera records whether a check (passed or not) found s a Galera node.
func (s *server) noteGalera(galera bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.galera = s.galera || galera
}

// isGalera reports whether a check has found s a Galera node.
func (s *server) isGalera() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.galera
}

// rankNow is s's Galera rank as of its last passed check.
func (s *server) rankNow() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rank
}

// replace records that writes moved off s to the server at addr.
func (s *server) replace(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replacedBy = addr
}

// replaced returns the server s was replaced by, or "".
func (s *server) replaced() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replacedBy
}

// reasonNow returns why s is not usable, as last recorded.
func (s *server) reasonNow() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replacedBy != "" {
		return "replaced by " + s.replacedBy + " when it failed: argo does not write to it again in this process (it may hold writes " + s.replacedBy + " lacks, or lack those " + s.replacedBy + " took); make it a replica (read_only=ON) of the current primary, and restart the process to use it once it is the primary again"
	}
	switch s.health {
	case healthUsable:
		return "usable"
	case healthUnknown:
		return "not tried"
	}
	return s.reason
}

// reasonOf is err's text with the password, should it appear, replaced.
func (s *server) reasonOf(err error) string {
	if err == nil {
		return "unusable"
	}
	msg := err.Error()
	if s.password != "" {
		msg = strings.ReplaceAll(msg, s.password, "***")
	}
	return msg
}

package costgate

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"
)

// The MySQL side counts on the wire: a DSN whose network is a name this
// package registered (WireDSN) dials TCP through a net.Conn that reads the
// packets the client writes. A packet with sequence number 0 starts a
// command; the command byte says which.
const (
	comQuit        = 0x01
	comQuery       = 0x03
	comPing        = 0x0e
	comStmtPrepare = 0x16
	comStmtExecute = 0x17
	comStmtClose   = 0x19
	comStmtReset   = 0x1a
)

var (
	wireMu       sync.Mutex
	wireCounters = map[string]*Counter{}
	wireSeq      atomic.Int64
)

// WireDSN returns dsn (a go-sql-driver DSN over tcp) with its network
// replaced by one whose connections count into c.
func WireDSN(dsn string, c *Counter) (string, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", err
	}
	if cfg.Net != "tcp" {
		return "", fmt.Errorf("costgate: DSN network %q: want tcp", cfg.Net)
	}
	name := fmt.Sprintf("argocost%d", wireSeq.Add(1))
	wireMu.Lock()
	wireCounters[name] = c
	wireMu.Unlock()
	mysql.RegisterDialContext(name, func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return &wireConn{Conn: nc, s: &session{c: c}}, nil
	})
	cfg.Net = name
	return cfg.FormatDSN(), nil
}

// wireConn reads the client's packets as they are written.
type wireConn struct {
	net.Conn
	s   *session
	buf []byte
	// mid is true while a command's continuation packets (a query over
	// 16 MiB) are still to come.
	mid bool
}

func (w *wireConn) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for len(w.buf) >= 4 {
		n := int(w.buf[0]) | int(w.buf[1])<<8 | int(w.buf[2])<<16
		if len(w.buf) < 4+n {
			break
		}
		seq, payload := w.buf[3], w.buf[4:4+n]
		if seq == 0 && n > 0 {
			w.command(payload)
		}
		w.buf = w.buf[4+n:]
	}
	if len(w.buf) == 0 {
		w.buf = nil
	}
	return w.Conn.Write(p)
}

func (w *wireConn) command(payload []byte) {
	switch payload[0] {
	case comQuit, comStmtClose, comPing, comStmtReset:
		// No answer waited on (close, quit), or connection upkeep.
	case comQuery:
		w.s.trip()
		setupOnly := true
		for _, st := range splitStatements(string(payload[1:])) {
			if !w.s.statement(st) {
				setupOnly = false
			}
		}
		if setupOnly {
			w.s.untrip() // SET NAMES at connect: the connection's, not a task's
		}
	case comStmtPrepare:
		w.s.trip()
	case comStmtExecute:
		w.s.trip()
		w.s.statement("EXECUTE (prepared)")
	default:
		w.s.trip()
	}
}

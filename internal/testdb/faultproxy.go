package testdb

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// FaultProxy is a TCP proxy on the loopback interface between a MySQL
// client and server that can lose the server's answer to a chosen query: it
// forwards the client's query to the server, lets the server run it to the
// end (its answer is read and thrown away, so an autocommit statement or a
// multi-statement transaction has committed), and cuts the client's
// connection instead of answering. The client sees the connection drop
// after sending the query: a write whose outcome it cannot know.
type FaultProxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu    sync.Mutex
	rules []*cutRule
	conns map[net.Conn]struct{}
	done  bool
	wg    sync.WaitGroup

	cuts atomic.Int64
	// refusing: every connection is cut at once (the server unreachable).
	refusing       atomic.Bool
	refuseAfterCut atomic.Bool
}

type cutRule struct {
	contains []byte
	left     int
}

// NewFaultProxy starts a proxy on 127.0.0.1 in front of the server of dsn
// (a "mysql:" DSN, as from MySQLDSN) and stops it when the test ends.
func NewFaultProxy(t testing.TB, dsn string) *FaultProxy {
	t.Helper()
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, "mysql:"))
	if err != nil {
		t.Fatalf("faultproxy: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faultproxy: listen: %v", err)
	}
	p := &FaultProxy{t: t, ln: ln, target: cfg.Addr, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// DSN returns dsn (a "mysql:" DSN) pointed at the proxy instead of its server.
func (p *FaultProxy) DSN(dsn string) string {
	cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, "mysql:"))
	if err != nil {
		p.t.Fatalf("faultproxy: %v", err)
	}
	cfg.Addr = p.ln.Addr().String()
	cfg.Net = "tcp"
	return "mysql:" + cfg.FormatDSN()
}

// CutAnswer arms the proxy: the next times client packets whose text
// contains contains (a COM_QUERY's SQL, for instance "INSERT INTO
// argo_task (") reach the server, run there, and have their answer lost.
func (p *FaultProxy) CutAnswer(contains string, times int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, &cutRule{contains: []byte(contains), left: times})
}

// RefuseAfterCut makes the next lost answer also make the server
// unreachable (SetRefusing(true)) before the client learns of the cut.
func (p *FaultProxy) RefuseAfterCut() { p.refuseAfterCut.Store(true) }

// SetRefusing(true) cuts every connection through the proxy and every new
// one at once, as if the server were unreachable; SetRefusing(false) lets
// new connections through again.
func (p *FaultProxy) SetRefusing(on bool) {
	// Under mu, so that a connection being set up (dialled while refusing
	// was still false) is either in conns now and closed here, or sees
	// refusing in track and is closed there: none slips through.
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refusing.Store(on)
	if !on {
		return
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Cuts returns how many answers the proxy has lost so far.
func (p *FaultProxy) Cuts() int { return int(p.cuts.Load()) }

// Close stops the proxy and drops every connection.
func (p *FaultProxy) Close() {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	p.done = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track records a new client/server pair, or reports false (the caller
// closes both) when the proxy is closed or refusing.
func (p *FaultProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done || p.refusing.Load() {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *FaultProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.refusing.Load() {
			client.Close()
			continue
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client, server) {
			client.Close()
			server.Close()
			continue // Accept fails once Close has closed the listener
		}
		pair := &proxyPair{p: p, client: client, server: server}
		p.wg.Add(2)
		go pair.clientToServer()
		go pair.serverToClient()
	}
}

// matches reports (and consumes) an armed rule the packet payload matches.
func (p *FaultProxy) matches(payload []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.rules {
		if bytes.Contains(payload, r.contains) {
			if r.left--; r.left <= 0 {
				p.rules = append(p.rules[:i], p.rules[i+1:]...)
			}
			return true
		}
	}
	return false
}

type proxyPair struct {
	p              *FaultProxy
	client, server net.Conn
	// cutting: the client's last packet matched; the server's next bytes
	// are its answer, to be lost.
	cutting atomic.Bool
}

// clientToServer forwards the client's packets one by one (4-byte header:
// 3-byte little-endian length, sequence number), checking each.
func (pp *proxyPair) clientToServer() {
	defer pp.p.wg.Done()
	defer func() {
		if !pp.cutting.Load() { // else serverToClient drains it until Close
			pp.server.Close()
		}
	}()
	hdr := make([]byte, 4)
	for {
		if _, err := io.ReadFull(pp.client, hdr); err != nil {
			return
		}
		n := int(binary.LittleEndian.Uint32(append(hdr[:3:3], 0)))
		payload := make([]byte, n)
		if _, err := io.ReadFull(pp.client, payload); err != nil {
			return
		}
		if pp.p.matches(payload) {
			pp.cutting.Store(true)
		}
		if _, err := pp.server.Write(append(append([]byte{}, hdr...), payload...)); err != nil {
			return
		}
	}
}

// serverToClient forwards the server's bytes, except an answer to be lost:
// then the client's connection is cut, and the server's connection is
// drained (so that the server runs every statement of the query and
// commits) until the proxy closes.
func (pp *proxyPair) serverToClient() {
	defer pp.p.wg.Done()
	defer pp.client.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := pp.server.Read(buf)
		if n > 0 && pp.cutting.Load() {
			pp.p.cuts.Add(1)
			if pp.p.refuseAfterCut.CompareAndSwap(true, false) {
				pp.p.SetRefusing(true)
			}
			pp.client.Close()
			_, _ = io.Copy(io.Discard, pp.server)
			return
		}
		if n > 0 {
			if _, werr := pp.client.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

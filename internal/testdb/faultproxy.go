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

	// blackhole and frozen (under mu): nothing is forwarded; see
	// SetBlackhole and SetFrozen. gate is closed (and replaced) whenever
	// either changes or the proxy closes, waking the forwarders waiting on it.
	blackhole bool
	frozen    bool
	gate      chan struct{}
	// dropped: the pairs that lost bytes to the blackhole, closed when it
	// ends (their streams lack those bytes).
	dropped map[*proxyPair]struct{}
	// droppedBytes counts the bytes lost to the blackhole.
	droppedBytes atomic.Int64
}

type cutRule struct {
	contains []byte
	match    func(payload []byte) bool // instead of contains, if set
	left     int
}

// hit reports whether the packet payload matches the rule.
func (r *cutRule) hit(payload []byte) bool {
	if r.match != nil {
		return r.match(payload)
	}
	return bytes.Contains(payload, r.contains)
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
	p := &FaultProxy{t: t, ln: ln, target: cfg.Addr, conns: map[net.Conn]struct{}{},
		gate: make(chan struct{}), dropped: map[*proxyPair]struct{}{}}
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

// CutCommit arms the proxy: the next times queries that commit (a
// COM_QUERY whose text is COMMIT, or ends with "; COMMIT": a multi-statement
// transaction) reach the server, run there, and have their answer lost.
// A statement that only names READ COMMITTED is not one: a cut there would
// leave the server's session mid-transaction, holding its locks until the
// proxy closes (the proxy drains the server's side of a cut connection).
func (p *FaultProxy) CutCommit(times int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, &cutRule{match: isCommit, left: times})
}

// isCommit reports whether payload is a COM_QUERY that commits (CutCommit).
func isCommit(payload []byte) bool {
	if len(payload) == 0 || payload[0] != 0x03 {
		return false
	}
	q := bytes.TrimRight(payload[1:], " ;\t\r\n")
	const end = "; COMMIT"
	if len(q) > len(end) {
		q = q[len(q)-len(end):] // only the tail is looked at (a call may be large)
	}
	q = bytes.ToUpper(q)
	return bytes.Equal(q, []byte("COMMIT")) || bytes.Equal(q, []byte(end))
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

// SetBlackhole(true) makes the server unreachable the way a firewall that
// drops packets does: connections stay open on both sides and new ones are
// accepted, but nothing is forwarded in either direction. Bytes that open
// connections send meanwhile are read and dropped (the peer waits for an
// answer that never comes, until its own timeout); a new connection is
// held, not dialled to the server, so its client waits for the server's
// greeting. SetBlackhole(false) forwards again: a held new connection is
// dialled to the server then, and every connection that lost bytes to the
// blackhole is closed (its stream is missing them, as a TCP connection
// whose peer vanished for too long is reset).
func (p *FaultProxy) SetBlackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackhole = on
	if !on {
		for pp := range p.dropped {
			pp.closeBoth()
			delete(p.dropped, pp)
		}
	}
	p.openGate()
}

// SetFrozen(true) stalls the network without losing a byte: connections
// stay open on both sides and new ones are accepted, but nothing is
// forwarded in either direction; bytes sent meanwhile are held (a new
// connection is dialled to the server only once the freeze ends).
// SetFrozen(false) resumes forwarding and delivers every held byte in
// order, as a TCP connection does once a stalled path comes back.
func (p *FaultProxy) SetFrozen(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = on
	p.openGate()
}

// openGate wakes every forwarder waiting for a change (under mu).
func (p *FaultProxy) openGate() {
	close(p.gate)
	p.gate = make(chan struct{})
}

// Forwarding verdicts of await.
const (
	forward = iota // send the bytes on
	drop           // the blackhole: lose them
	stop           // the proxy is closed
)

// await blocks while the proxy is frozen and reports what to do with bytes
// read from one side of pp (nil for a new connection's setup) now.
func (p *FaultProxy) await(pp *proxyPair) int {
	for {
		p.mu.Lock()
		done, blackhole, frozen, gate := p.done, p.blackhole, p.frozen, p.gate
		if !done && !frozen && blackhole && pp != nil {
			p.dropped[pp] = struct{}{}
		}
		p.mu.Unlock()
		switch {
		case done:
			return stop
		case frozen || (blackhole && pp == nil):
			<-gate
		case blackhole:
			return drop
		default:
			return forward
		}
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
	p.openGate()
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// track records new connections, or reports false (the caller closes
// them) when the proxy is closed or refusing.
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
		if !p.track(client) {
			client.Close()
			continue // Accept fails once Close has closed the listener
		}
		p.wg.Add(1)
		go p.connect(client)
	}
}

// connect dials the server for a new client connection, once neither a
// blackhole nor a freeze holds it, and starts forwarding between them.
func (p *FaultProxy) connect(client net.Conn) {
	defer p.wg.Done()
	if p.await(nil) != forward {
		client.Close()
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(server) {
		client.Close()
		server.Close()
		return
	}
	pair := &proxyPair{p: p, client: client, server: server}
	p.wg.Add(2)
	go pair.clientToServer()
	go pair.serverToClient()
}

// matches reports (and consumes) an armed rule the packet payload matches.
func (p *FaultProxy) matches(payload []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.rules {
		if r.hit(payload) {
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

// closeBoth cuts both of the pair's connections.
func (pp *proxyPair) closeBoth() {
	pp.client.Close()
	pp.server.Close()
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
		switch pp.p.await(pp) {
		case stop:
			return
		case drop:
			pp.p.droppedBytes.Add(int64(len(hdr) + n))
			continue
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
			switch pp.p.await(pp) {
			case stop:
				return
			case forward:
				if _, werr := pp.client.Write(buf[:n]); werr != nil {
					return
				}
			case drop:
				pp.p.droppedBytes.Add(int64(n))
			}
		}
		if err != nil {
			return
		}
	}
}

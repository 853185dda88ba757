package testdb

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testwait"
)

// fakeServer is a TCP listener standing in for a MySQL server: each
// connection the proxy dials arrives on conns, for the test to read and
// write its server side by hand.
type fakeServer struct {
	ln    net.Listener
	conns chan net.Conn
}

func newFakeServer(t *testing.T) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{ln: ln, conns: make(chan net.Conn, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(s.conns)
				return
			}
			s.conns <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for c := range s.conns {
			c.Close()
		}
	})
	return s
}

// dsn is a "mysql:" DSN naming the fake server's address.
func (s *fakeServer) dsn() string { return "mysql:u:p@tcp(" + s.ln.Addr().String() + ")/db" }

// accepted waits for the next connection the proxy dials to the server.
func (s *fakeServer) accepted(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-s.conns:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("the proxy dialled no connection to the server within 5s")
		return nil
	}
}

// noneAccepted checks that the proxy dials nothing to the server within d.
func (s *fakeServer) noneAccepted(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case c := <-s.conns:
		c.Close()
		t.Fatal("the proxy dialled the server while it should hold new connections")
	case <-time.After(d):
	}
}

// packet frames body as a MySQL packet (3-byte length, sequence 0).
func packet(body string) []byte {
	n := len(body)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), 0}, body...)
}

// expectBytes reads exactly want from c within 5 s.
func expectBytes(t *testing.T, c net.Conn, want []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("reading %q: %v", want, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %q, want %q", got, want)
	}
}

// expectSilence checks that nothing arrives on c within d.
func expectSilence(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 1)
	n, err := c.Read(buf)
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %d bytes (%v) through a cut-off proxy, want nothing", n, err)
	}
}

// expectClosed checks that c is closed by the proxy within 5 s.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			t.Fatalf("read %q on a connection that lost bytes, want it closed", buf[:n])
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("a connection that lost bytes to the blackhole is still open 5s after it ended")
		}
		if err != nil {
			return
		}
	}
}

// waitUntil polls cond until it holds, failing with what after 5 s
// (testwait.For).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, 5*time.Second, what, cond)
}

// pair dials a client through the proxy and returns it with its server side.
func dialPair(t *testing.T, p *FaultProxy, s *fakeServer) (client, server net.Conn) {
	t.Helper()
	client, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client, s.accepted(t)
}

// Under a blackhole, open connections stay open and forward nothing (the
// bytes are dropped), new connections are accepted but not dialled to the
// server; when it ends, the held new connection is dialled and forwards,
// and the connection that lost bytes is closed.
func TestFaultProxyBlackhole(t *testing.T) {
	s := newFakeServer(t)
	p := NewFaultProxy(t, s.dsn())
	c1, s1 := dialPair(t, p, s)
	c1.Write(packet("before"))
	expectBytes(t, s1, packet("before"))
	s1.Write([]byte("answer"))
	expectBytes(t, c1, []byte("answer"))

	p.SetBlackhole(true)
	if _, err := c1.Write(packet("lost up")); err != nil {
		t.Fatalf("writing to an open connection under the blackhole: %v, want it accepted", err)
	}
	s1.Write([]byte("lost down"))
	waitUntil(t, "the blackhole drops both directions' bytes", func() bool {
		return p.droppedBytes.Load() == int64(len(packet("lost up"))+len("lost down"))
	})
	c2, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatalf("dialling the proxy under the blackhole: %v, want the connection accepted", err)
	}
	defer c2.Close()
	c2.Write(packet("held"))
	expectSilence(t, s1, 200*time.Millisecond)
	expectSilence(t, c1, 10*time.Millisecond)
	expectSilence(t, c2, 10*time.Millisecond)
	s.noneAccepted(t, 10*time.Millisecond)

	p.SetBlackhole(false)
	s2 := s.accepted(t)
	expectBytes(t, s2, packet("held"))
	s2.Write([]byte("late answer"))
	expectBytes(t, c2, []byte("late answer"))
	expectClosed(t, c1)
}

// Under a freeze, open connections stay open and forward nothing in either
// direction, and new ones are accepted and held; when it ends, every held
// byte is delivered in order and the held connection is dialled.
func TestFaultProxyFrozen(t *testing.T) {
	s := newFakeServer(t)
	p := NewFaultProxy(t, s.dsn())
	c1, s1 := dialPair(t, p, s)
	c1.Write(packet("before"))
	expectBytes(t, s1, packet("before"))

	p.SetFrozen(true)
	c1.Write(packet("up 1"))
	c1.Write(packet("up 2"))
	s1.Write([]byte("down 1"))
	c2, err := net.Dial("tcp", p.ln.Addr().String())
	if err != nil {
		t.Fatalf("dialling the proxy while frozen: %v, want the connection accepted", err)
	}
	defer c2.Close()
	c2.Write(packet("new"))
	expectSilence(t, s1, 200*time.Millisecond)
	expectSilence(t, c1, 10*time.Millisecond)
	expectSilence(t, c2, 10*time.Millisecond)
	s.noneAccepted(t, 10*time.Millisecond)
	if n := p.droppedBytes.Load(); n != 0 {
		t.Fatalf("a freeze dropped %d bytes, want none", n)
	}

	p.SetFrozen(false)
	expectBytes(t, s1, append(packet("up 1"), packet("up 2")...))
	expectBytes(t, c1, []byte("down 1"))
	s2 := s.accepted(t)
	expectBytes(t, s2, packet("new"))
	c1.Write(packet("after"))
	expectBytes(t, s1, packet("after"))
}

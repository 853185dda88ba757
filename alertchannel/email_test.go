package alertchannel

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"io"
	"math/big"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSMTP is an SMTP server on loopback speaking enough of RFC 5321 for
// net/smtp: EHLO, STARTTLS (when it has a certificate), AUTH PLAIN (when
// it has a user), MAIL, RCPT, DATA, QUIT. It refuses AUTH before TLS and
// MAIL before AUTH when it has a user.
type fakeSMTP struct {
	t        *testing.T
	ln       net.Listener
	tls      *tls.Config
	user     string
	password string
	// failData answers DATA's end with 451 for the first failData messages.
	failData int

	mu       sync.Mutex
	messages []smtpMessage
	problems []string
	wg       sync.WaitGroup
}

type smtpMessage struct {
	from   string
	rcpt   []string
	data   []byte
	tls    bool
	authed bool
}

func newFakeSMTP(t *testing.T, withTLS bool, user, password string) (*fakeSMTP, *x509.CertPool) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeSMTP{t: t, ln: ln, user: user, password: password}
	var pool *x509.CertPool
	if withTLS {
		var cert tls.Certificate
		cert, pool = selfSigned(t)
		s.tls = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer conn.Close()
				s.serve(conn)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s, pool
}

func (s *fakeSMTP) problem(p string) {
	s.mu.Lock()
	s.problems = append(s.problems, p)
	s.mu.Unlock()
}

func (s *fakeSMTP) serve(conn net.Conn) {
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	tp := textproto.NewConn(conn)
	tp.PrintfLine("220 fake.test ESMTP")
	var msg smtpMessage
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO":
			ext := []string{"fake.test greets " + arg, "8BITMIME"}
			if s.tls != nil && !msg.tls {
				ext = append(ext, "STARTTLS")
			}
			if s.user != "" {
				ext = append(ext, "AUTH PLAIN")
			}
			for i, e := range ext {
				sep := "-"
				if i == len(ext)-1 {
					sep = " "
				}
				tp.PrintfLine("250%s%s", sep, e)
			}
		case "STARTTLS":
			if s.tls == nil || msg.tls {
				tp.PrintfLine("502 no STARTTLS")
				continue
			}
			tp.PrintfLine("220 ready to start TLS")
			tc := tls.Server(conn, s.tls)
			if err := tc.Handshake(); err != nil {
				s.problem("TLS handshake: " + err.Error())
				return
			}
			conn = tc
			tp = textproto.NewConn(tc)
			msg.tls = true
		case "AUTH":
			mech, resp, _ := strings.Cut(arg, " ")
			raw, err := base64.StdEncoding.DecodeString(resp)
			switch {
			case s.tls != nil && !msg.tls:
				s.problem("AUTH before STARTTLS")
				tp.PrintfLine("538 encryption required")
			case mech != "PLAIN" || err != nil || string(raw) != "\x00"+s.user+"\x00"+s.password:
				tp.PrintfLine("535 authentication failed")
			default:
				msg.authed = true
				tp.PrintfLine("235 ok")
			}
		case "MAIL":
			if s.user != "" && !msg.authed {
				tp.PrintfLine("530 authentication required")
				continue
			}
			msg.from = strings.TrimSuffix(strings.TrimPrefix(arg, "FROM:<"), ">")
			if i := strings.Index(msg.from, ">"); i >= 0 {
				msg.from = msg.from[:i]
			}
			tp.PrintfLine("250 ok")
		case "RCPT":
			msg.rcpt = append(msg.rcpt, strings.TrimSuffix(strings.TrimPrefix(arg, "TO:<"), ">"))
			tp.PrintfLine("250 ok")
		case "DATA":
			tp.PrintfLine("354 go ahead")
			data, err := tp.ReadDotBytes()
			if err != nil {
				return
			}
			s.mu.Lock()
			fail := s.failData > 0
			if fail {
				s.failData--
			} else {
				msg.data = data
				s.messages = append(s.messages, msg)
			}
			s.mu.Unlock()
			if fail {
				tp.PrintfLine("451 try again later")
			} else {
				tp.PrintfLine("250 queued")
			}
			msg.from, msg.rcpt = "", nil
		case "RSET", "NOOP":
			tp.PrintfLine("250 ok")
		case "QUIT":
			tp.PrintfLine("221 bye")
			return
		default:
			tp.PrintfLine("502 unknown command")
		}
	}
}

func (s *fakeSMTP) received() []smtpMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.problems) > 0 {
		s.t.Fatalf("the SMTP server saw problems: %q", s.problems)
	}
	return append([]smtpMessage(nil), s.messages...)
}

// selfSigned makes a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fake smtp"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// parseMail reads a received message: its header and decoded body.
func parseMail(t *testing.T, data []byte) (mail.Header, string) {
	t.Helper()
	m, err := mail.ReadMessage(bufio.NewReader(strings.NewReader(string(data))))
	if err != nil {
		t.Fatalf("not a mail message: %v\n%s", err, data)
	}
	if m.Header.Get("Content-Transfer-Encoding") != "quoted-printable" || m.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("header = %v", m.Header)
	}
	body, err := io.ReadAll(quotedprintable.NewReader(m.Body))
	if err != nil {
		t.Fatal(err)
	}
	return m.Header, string(body)
}

func TestEmailStartTLSAndAuth(t *testing.T) {
	srv, pool := newFakeSMTP(t, true, "alerts@example.test", "pw")
	c, err := NewEmail(EmailConfig{
		Addr: srv.ln.Addr().String(), From: "argo <argo@example.test>", To: []string{"ops@example.test", "dev@example.test"},
		Username: "alerts@example.test", Password: "pw", TLSConfig: &tls.Config{RootCAs: pool},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(context.Background(), alert("支付", 12, "timeout: 5s")); err != nil {
		t.Fatal(err)
	}
	msgs := srv.received()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if !m.tls || !m.authed || m.from != "argo@example.test" || strings.Join(m.rcpt, ",") != "ops@example.test,dev@example.test" {
		t.Errorf("session: tls %v authed %v from %q rcpt %v", m.tls, m.authed, m.from, m.rcpt)
	}
	h, body := parseMail(t, m.data)
	subject, err := new(mime.WordDecoder).DecodeHeader(h.Get("Subject"))
	if err != nil || subject != "argo alert: 支付" {
		t.Errorf("subject %q (%v)", subject, err)
	}
	if h.Get("To") != "ops@example.test, dev@example.test" || h.Get("From") != "argo <argo@example.test>" {
		t.Errorf("header = %v", h)
	}
	if !strings.Contains(body, "task 支付 (id 12) failed attempt 3 of 5\nerror: timeout: 5s") {
		t.Errorf("body = %q", body)
	}
}

// A server without STARTTLS on loopback: plain, no auth.
func TestEmailPlain(t *testing.T) {
	srv, _ := newFakeSMTP(t, false, "", "")
	c, err := NewEmail(EmailConfig{Addr: srv.ln.Addr().String(), From: "argo@example.test", To: []string{"ops@example.test"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(context.Background(), alert("pay", 1, "x")); err != nil {
		t.Fatal(err)
	}
	if msgs := srv.received(); len(msgs) != 1 || msgs[0].tls || msgs[0].authed {
		t.Fatalf("messages %+v, want one plain", msgs)
	}
}

// A line break in a task name or error cannot add a header.
func TestEmailSubjectCannotInjectHeaders(t *testing.T) {
	srv, _ := newFakeSMTP(t, false, "", "")
	c, err := NewEmail(EmailConfig{Addr: srv.ln.Addr().String(), From: "argo@example.test", To: []string{"ops@example.test"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(context.Background(), alert("pay\r\nBcc: thief@example.test", 1, "x")); err != nil {
		t.Fatal(err)
	}
	h, _ := parseMail(t, srv.received()[0].data)
	if h.Get("Bcc") != "" {
		t.Fatalf("the task name added a Bcc header: %v", h)
	}
	if subject, _ := new(mime.WordDecoder).DecodeHeader(h.Get("Subject")); subject != "argo alert: pay\r\nBcc: thief@example.test" {
		t.Errorf("subject %q", subject)
	}
}

// A temporary SMTP failure is retried.
func TestEmailRetried(t *testing.T) {
	srv, _ := newFakeSMTP(t, false, "", "")
	srv.failData = 1
	obs := &recorder{}
	c, err := NewEmail(EmailConfig{Options: Options{Observer: obs, Backoff: time.Millisecond}, Addr: srv.ln.Addr().String(), From: "argo@example.test", To: []string{"ops@example.test"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(context.Background(), alert("pay", 1, "x")); err != nil {
		t.Fatal(err)
	}
	if len(srv.received()) != 1 || obs.get("email", OutcomeRetried) != 1 || obs.get("email", OutcomeSent) != 1 {
		t.Errorf("messages %d retried %d sent %d, want 1 1 1", len(srv.received()), obs.get("email", OutcomeRetried), obs.get("email", OutcomeSent))
	}
}

// Wrong credentials fail.
func TestEmailAuthFails(t *testing.T) {
	srv, pool := newFakeSMTP(t, true, "alerts@example.test", "pw")
	c, err := NewEmail(EmailConfig{Options: Options{MaxAttempts: 1}, Addr: srv.ln.Addr().String(), From: "argo@example.test", To: []string{"ops@example.test"},
		Username: "alerts@example.test", Password: "nope", TLSConfig: &tls.Config{RootCAs: pool}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(context.Background(), alert("pay", 1, "x")); err == nil || !strings.Contains(err.Error(), "535") {
		t.Fatalf("Send = %v, want the 535 refusal", err)
	}
	if len(srv.received()) != 0 {
		t.Error("a message was accepted")
	}
}

func TestEmailConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  EmailConfig
		want string
	}{
		{EmailConfig{Addr: "smtp", From: "a@b.test", To: []string{"c@d.test"}}, "host:port"},
		{EmailConfig{Addr: "h:25", From: "not an address", To: []string{"c@d.test"}}, "From"},
		{EmailConfig{Addr: "h:25", From: "a@b.test"}, "at least one recipient"},
		{EmailConfig{Addr: "h:25", From: "a@b.test", To: []string{"x\r\nBcc: y"}}, "To"},
	} {
		if _, err := NewEmail(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewEmail(%+v) = %v, want an error about %s", c.cfg, err, c.want)
		}
	}
}

package alertchannel

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"strings"
	"time"
)

// EmailConfig configures NewEmail, for an SMTP server.
type EmailConfig struct {
	Options
	// Addr is the SMTP server's host:port (a submission port, 587, say). Required.
	Addr string
	// From is the sender's address. Required.
	From string
	// To are the recipients' addresses. At least one.
	To []string
	// Username and Password, when Username is set, log in with PLAIN
	// authentication (which net/smtp sends only over TLS or to localhost).
	Username, Password string
	// TLSConfig is used for STARTTLS, which is used whenever the server
	// offers it. Default: ServerName the host of Addr.
	TLSConfig *tls.Config
	// LocalName is the name said in EHLO. Default "localhost".
	LocalName string
}

// NewEmail returns a channel that mails each message (Options.Subject as
// the subject, the rendered Template as a UTF-8 text body). It has no rate
// limit by default.
func NewEmail(cfg EmailConfig) (*Channel, error) {
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil || host == "" {
		return nil, fmt.Errorf("alertchannel: email Addr %q: want the SMTP server's host:port", cfg.Addr)
	}
	from, err := mail.ParseAddress(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("alertchannel: email From %q: %v", cfg.From, err)
	}
	if len(cfg.To) == 0 {
		return nil, fmt.Errorf("alertchannel: email To: want at least one recipient")
	}
	env := envelope{from: from.Address}
	for _, to := range cfg.To {
		addr, err := mail.ParseAddress(to)
		if err != nil {
			return nil, fmt.Errorf("alertchannel: email To %q: %v", to, err)
		}
		env.to = append(env.to, addr.Address)
	}
	tlsConfig := cfg.TLSConfig.Clone()
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	if tlsConfig.ServerName == "" {
		tlsConfig.ServerName = host
	}
	if cfg.LocalName == "" {
		cfg.LocalName = "localhost"
	}
	return newChannel("email", cfg.Options, DefaultTemplate, -1, func(ctx context.Context, m rendered) error {
		return sendMail(ctx, cfg, env, host, tlsConfig, m)
	})
}

// envelope is the SMTP sender and recipients: the bare addresses of From and To.
type envelope struct {
	from string
	to   []string
}

// sendMail runs one SMTP session, bounded by ctx.
func sendMail(ctx context.Context, cfg EmailConfig, env envelope, host string, tlsConfig *tls.Config, m rendered) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", cfg.Addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Hello(cfg.LocalName); err != nil {
		return err
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		if err := c.StartTLS(tlsConfig); err != nil {
			return fmt.Errorf("STARTTLS: %w", err)
		}
	}
	if cfg.Username != "" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return fmt.Errorf("the SMTP server offers no AUTH, but Username is set")
		}
		if err := c.Auth(smtp.PlainAuth("", cfg.Username, cfg.Password, host)); err != nil {
			return fmt.Errorf("AUTH: %w", err)
		}
	}
	if err := c.Mail(env.from); err != nil {
		return err
	}
	for _, to := range env.to {
		if err := c.Rcpt(to); err != nil {
			return err
		}
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(mailMessage(cfg, m, time.Now())); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// mailMessage is the message's header and quoted-printable body. The
// subject is MIME-encoded, so a line break in a task name or error cannot
// start a header of its own.
func mailMessage(cfg EmailConfig, m rendered, now time.Time) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: %s\r\n", cfg.From)
	fmt.Fprintf(&b, "To: %s\r\n", strings.Join(cfg.To, ", "))
	fmt.Fprintf(&b, "Subject: %s\r\n", mime.QEncoding.Encode("utf-8", m.Subject))
	fmt.Fprintf(&b, "Date: %s\r\n", now.Format(time.RFC1123Z))
	b.WriteString("MIME-Version: 1.0\r\n")
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\n")
	b.WriteString("Content-Transfer-Encoding: quoted-printable\r\n\r\n")
	qp := quotedprintable.NewWriter(&b)
	qp.Write([]byte(strings.ReplaceAll(m.Text, "\n", "\r\n")))
	qp.Close()
	b.WriteString("\r\n")
	return b.Bytes()
}

package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/argo-retry/argo/console"
)

// Defaults of argoctl serve.
const (
	defaultServeListen = "127.0.0.1:8080"
	// serveShutdownGrace is how long a stopping server lets requests finish.
	serveShutdownGrace = 10 * time.Second
	// bearerOperator is who requests with the -auth-bearer token act as.
	bearerOperator = "token"
)

// cmdServe runs the operator console (package console) on -listen until
// Ctrl-C or SIGTERM.
func cmdServe(e *env, args []string) error {
	fs := newFlagSet("serve")
	listen := fs.String("listen", defaultServeListen, "address to listen on (host:port)")
	write := fs.Bool("write", false, "enable the actions (requeue, discard, run now, force to dead letter); default read-only")
	basic := fs.String("auth-basic", "", "require HTTP basic auth: user:password[,user2:password2] (default $ARGO_CONSOLE_AUTH_BASIC); the user goes into the operator trail")
	bearer := fs.String("auth-bearer", "", "require Authorization: Bearer TOKEN (default $ARGO_CONSOLE_AUTH_BEARER); changes are recorded as operator \""+bearerOperator+"\"")
	review := fs.Bool("require-discard-approval", true, "a discard is a request another operator approves (the default; kept for scripts that pass it)")
	traceURL := fs.String("trace-url", "", "link trace ids to this URL, {traceId} replaced (e.g. https://traces.example/trace/{traceId})")
	pos, err := parse(e, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("serve takes no arguments (got %q)", strings.Join(pos, " "))
	}
	if !*review {
		return usagef("serve -require-discard-approval=false: a discard needs a second operator by default; to let one operator discard alone, pass -single-operator-discard")
	}
	// -single-operator-discard is a global flag (as for discard itself);
	// -discard-approval wins over it.
	single := e.g.singleOperatorDiscard && !e.g.discardApproval
	if *basic == "" {
		*basic = os.Getenv("ARGO_CONSOLE_AUTH_BASIC")
	}
	if *bearer == "" {
		*bearer = os.Getenv("ARGO_CONSOLE_AUTH_BEARER")
	}
	users, err := parseBasicUsers(*basic)
	if err != nil {
		return err
	}
	auth := len(users) > 0 || *bearer != ""
	if !auth && !loopback(*listen) {
		return usagef("serve -listen %s is reachable from other machines: give -auth-basic user:password or -auth-bearer TOKEN, or listen on a loopback address (-listen 127.0.0.1:8080)", *listen)
	}

	c, err := open(e, true)
	if err != nil {
		return err
	}
	defer c.db.Close()
	c.in.SingleOperatorDiscard = single
	opts := console.Options{Inspector: c.in, AllowWrites: *write, TraceURL: *traceURL, SingleOperatorDiscard: single, Now: now}
	if opts.Cipher, err = e.g.cipher(""); err != nil { // cipher.go: the task page decrypts with $ARGO_CIPHER_KEYS
		return err
	}
	if auth {
		opts.Authenticate = serveAuthenticator(users, *bearer)
		if len(users) > 0 {
			opts.Challenge = `Basic realm="argo console", charset="UTF-8"`
		}
	} else {
		operator := c.in.Operator
		opts.Authenticate = func(*http.Request) (string, bool) { return operator, true }
	}
	h, err := console.New(opts)
	if err != nil {
		return usagef("serve: %v", err)
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
	mode := "read-only"
	if *write {
		mode = "actions enabled"
	}
	fmt.Fprintf(e.stdout, "argo console on http://%s/ (%s); Ctrl-C stops it\n", ln.Addr(), mode)

	ctx, stop := signal.NotifyContext(e.ctx, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), serveShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("serve: stopping: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintln(e.stdout, "argo console stopped")
	return nil
}

// loopback reports whether addr (host:port) listens on loopback only. An
// empty host, 0.0.0.0 and :: listen everywhere; a name other than
// localhost is not trusted to resolve to loopback.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// parseBasicUsers reads user:password[,user2:password2].
func parseBasicUsers(s string) (map[string]string, error) {
	users := map[string]string{}
	if s == "" {
		return users, nil
	}
	for _, pair := range strings.Split(s, ",") {
		user, pass, ok := strings.Cut(pair, ":")
		if !ok || user == "" || pass == "" {
			return nil, usagef("-auth-basic %q: want user:password, several separated by commas", redactPair(pair))
		}
		users[user] = pass
	}
	return users, nil
}

// redactPair shows a user:password pair without its password.
func redactPair(pair string) string {
	if user, _, ok := strings.Cut(pair, ":"); ok {
		return user + ":…"
	}
	return pair
}

// serveAuthenticator checks basic auth against users, or the bearer token;
// the operator is the basic user, or bearerOperator.
func serveAuthenticator(users map[string]string, token string) func(*http.Request) (string, bool) {
	return func(r *http.Request) (string, bool) {
		if user, pass, ok := r.BasicAuth(); ok {
			want, known := users[user]
			if known && subtle.ConstantTimeCompare([]byte(pass), []byte(want)) == 1 {
				return user, true
			}
			return "", false
		}
		if token != "" {
			if got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1 {
				return bearerOperator, true
			}
		}
		return "", false
	}
}

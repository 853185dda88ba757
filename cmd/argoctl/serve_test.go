package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
)

// TestServeRefusesOpenListenWithoutAuth: a -listen other machines reach
// needs -auth-basic or -auth-bearer; the message says what to do.
func TestServeRefusesOpenListenWithoutAuth(t *testing.T) {
	dsn := testdb.SQLiteDSN(t)
	seed(t, dsn)
	for _, listen := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "console.example:0"} {
		// Were the refusal missing, serve would run until this context ends.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var out, errb strings.Builder
		code := run(ctx, []string{"-dsn", dsn, "serve", "-listen", listen}, &out, &errb, func(string) string { return "" })
		cancel()
		const want = "is reachable from other machines: give -auth-basic user:password or -auth-bearer TOKEN, or listen on a loopback address"
		if code != 2 || !strings.Contains(errb.String(), want) || out.Len() != 0 {
			t.Errorf("serve -listen %s without auth: exit %d, stdout %q, stderr %q; want exit 2 and %q", listen, code, out.String(), errb.String(), want)
		}
	}
	failCtl(t, dsn, 2, `-auth-basic "alice:…": want user:password`, "serve", "-listen", "0.0.0.0:0", "-auth-basic", "bob:pw,alice:")
	failCtl(t, dsn, 2, "serve takes no arguments", "serve", "extra")
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:8080": true, "localhost:1": true, "[::1]:80": true, "127.9.9.9:1": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:1": false, "10.0.0.1:1": false, "example.com:80": false, "nonsense": false} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestServeServesAndStops: serve answers the console on its address,
// checks basic auth and the bearer token (401 otherwise; the operator in
// the page is the basic user), and stops cleanly when its context ends.
func TestServeServesAndStops(t *testing.T) {
	for _, b := range testdb.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			seed(t, b.DSN)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pr, pw := io.Pipe()
			done := make(chan int, 1)
			go func() {
				getenv := func(k string) string {
					if k == "ARGO_DSN" {
						return b.DSN
					}
					return ""
				}
				var errb strings.Builder
				code := run(ctx, []string{"serve", "-listen", "0.0.0.0:0", "-auth-basic", "alice:s3cret,bob:pw2", "-auth-bearer", "tok-123"}, pw, &errb, getenv)
				if code != 0 {
					t.Errorf("serve: exit %d: %s", code, errb.String())
				}
				pw.Close()
				done <- code
			}()
			lines := bufio.NewScanner(pr)
			if !lines.Scan() {
				t.Fatal("serve printed nothing")
			}
			m := regexp.MustCompile(`^argo console on http://([^/]+)/ \(read-only\); Ctrl-C stops it$`).FindStringSubmatch(lines.Text())
			if m == nil {
				t.Fatalf("serve's first line: %q", lines.Text())
			}
			base := "http://" + m[1] + "/"
			rest := make(chan []string, 1)
			go func() {
				var out []string
				for lines.Scan() {
					out = append(out, lines.Text())
				}
				rest <- out
			}()
			client := &http.Client{Timeout: 10 * time.Second}
			request := func(path string, set func(*http.Request)) (int, string) {
				t.Helper()
				req, _ := http.NewRequest("GET", base+path, nil)
				set(req)
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(body)
			}
			if code, _ := request("", func(*http.Request) {}); code != http.StatusUnauthorized {
				t.Errorf("no credentials: %d, want 401", code)
			}
			if code, _ := request("", func(r *http.Request) { r.SetBasicAuth("alice", "wrong") }); code != http.StatusUnauthorized {
				t.Errorf("wrong password: %d, want 401", code)
			}
			if code, _ := request("", func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }); code != http.StatusUnauthorized {
				t.Errorf("wrong token: %d, want 401", code)
			}
			code, body := request("tasks/3", func(r *http.Request) { r.SetBasicAuth("bob", "pw2") })
			if code != http.StatusOK || !strings.Contains(body, `<b id="operator">bob</b>`) || !strings.Contains(body, `id="task-state"`) {
				t.Errorf("as bob: %d\n%s", code, body)
			}
			if code, body := request("", func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-123") }); code != http.StatusOK || !strings.Contains(body, `id="state-counts"`) {
				t.Errorf("with the token: %d", code)
			}
			cancel()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("serve did not stop within 20s of its context ending")
			}
			if last := <-rest; len(last) != 1 || last[0] != "argo console stopped" {
				t.Errorf("serve's last lines: %q", last)
			}
		})
	}
}

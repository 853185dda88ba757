package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// get asks url with client and turns the answer into an error as a task
// would: the transport's error, or ResponseError for a status >= 400.
func get(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return ResponseError(resp)
}

// TestIsTransientErrorHTTPStatus (seed 002's IsTransientError): over a real
// HTTP server, 4xx answers are permanent except 408 and 429, 5xx answers
// transient, and 2xx no error at all.
func TestIsTransientErrorHTTPStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var code int
		fmt.Sscanf(r.URL.Path, "/%d", &code)
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "7")
		}
		w.WriteHeader(code)
	}))
	defer srv.Close()
	for code, transient := range map[int]bool{
		400: false, 401: false, 403: false, 404: false, 409: false, 422: false,
		408: true, 429: true, 500: true, 502: true, 503: true, 504: true,
	} {
		err := get(context.Background(), srv.Client(), fmt.Sprintf("%s/%d", srv.URL, code))
		var se *HTTPStatusError
		if !errors.As(err, &se) || se.Code != code {
			t.Fatalf("HTTP %d: error %v, want an *HTTPStatusError with the code", code, err)
		}
		if got := IsTransientError(err); got != transient {
			t.Errorf("HTTP %d: IsTransientError = %v, want %v (%v)", code, got, transient, err)
		}
		if IsPermanentError(err) == transient {
			t.Errorf("HTTP %d: IsPermanentError is not the opposite of IsTransientError", code)
		}
	}
	if err := get(context.Background(), srv.Client(), srv.URL+"/204"); err != nil {
		t.Fatalf("HTTP 204: %v, want nil", err)
	}
	if d, ok := retryAfterOf(get(context.Background(), srv.Client(), srv.URL+"/429")); !ok || d != 7*time.Second {
		t.Fatalf("HTTP 429 with Retry-After 7: retry after %s, %v; want 7s", d, ok)
	}
}

// TestIsTransientErrorNetwork: real transport failures. A refused
// connection, a reset, a timeout are transient; the caller's own
// cancellation and a certificate the client does not trust are permanent.
func TestIsTransientErrorNetwork(t *testing.T) {
	ctx := context.Background()
	t.Run("refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		err = get(ctx, http.DefaultClient, "http://"+addr+"/")
		if err == nil || !IsTransientError(err) {
			t.Fatalf("connection refused: %v, transient %v; want transient", err, IsTransientError(err))
		}
	})
	t.Run("reset", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				buf := make([]byte, 1)
				c.Read(buf)                   // the request has arrived
				c.(*net.TCPConn).SetLinger(0) // close with RST
				c.Close()
			}
		}()
		err = get(ctx, &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, "http://"+ln.Addr().String()+"/")
		t.Log(err)
		if err == nil || !IsTransientError(err) {
			t.Fatalf("connection reset: %v, transient %v; want transient", err, IsTransientError(err))
		}
	})
	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(release)
		client := srv.Client()
		client.Timeout = 50 * time.Millisecond
		err := get(ctx, client, srv.URL)
		if err == nil || !IsTransientError(err) {
			t.Fatalf("client timeout: %v, transient %v; want transient", err, IsTransientError(err))
		}
		dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if err := get(dctx, srv.Client(), srv.URL); err == nil || !IsTransientError(err) {
			t.Fatalf("deadline of the attempt's context: %v; want transient", err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		started := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(started)
			<-r.Context().Done()
		}))
		defer srv.Close()
		cctx, cancel := context.WithCancel(ctx)
		go func() { <-started; cancel() }()
		err := get(cctx, srv.Client(), srv.URL)
		if !errors.Is(err, context.Canceled) || IsTransientError(err) {
			t.Fatalf("caller's cancellation: %v, transient %v; want permanent", err, IsTransientError(err))
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		defer srv.Close()
		err := get(ctx, &http.Client{}, srv.URL) // not srv.Client(): the test CA is not trusted
		t.Log(err)
		if err == nil || IsTransientError(err) {
			t.Fatalf("TLS certificate from an unknown authority: %v, transient %v; want permanent", err, IsTransientError(err))
		}
	})
}

// TestIsTransientErrorOthers: sql.ErrNoRows from a real query and
// runtime.Permanent are permanent; an unknown error, a panic and nil are
// as documented.
func TestIsTransientErrorOthers(t *testing.T) {
	rt := startRuntime(t, testConfigT(t, "sqlite:"+t.TempDir()+"/argo.db"))
	var id int64
	err := rt.DB().QueryRowContext(context.Background(), "SELECT id FROM argo_task WHERE id = -1").Scan(&id)
	if err == nil || IsTransientError(fmt.Errorf("load order: %w", err)) {
		t.Fatalf("sql.ErrNoRows: %v, want permanent", err)
	}
	if IsTransientError(Permanent(errors.New("invalid SKU"))) {
		t.Fatal("runtime.Permanent is transient")
	}
	if !IsTransientError(errors.New("something odd")) || !IsTransientError(&PanicError{Value: "boom"}) {
		t.Fatal("an unknown error or a panic is not transient: argo retries them by default")
	}
	if IsTransientError(nil) || IsPermanentError(nil) {
		t.Fatal("nil is neither")
	}
}

// TestIsPermanentErrorOptIn: with Config.IsPermanent = IsPermanentError a
// task whose downstream answers 404 stops after one attempt (outcome
// permanent); one answered 503 is retried.
func TestIsPermanentErrorOptIn(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var code int
		fmt.Sscanf(r.URL.Path, "/%d", &code)
		w.WriteHeader(code)
	}))
	defer srv.Close()
	cfg := testConfigT(t, "sqlite:"+t.TempDir()+"/argo.db")
	cfg.IsPermanent = IsPermanentError
	rt := startRuntime(t, cfg)
	def := &TaskDef{Name: "seed002.Call", Policy: fastPolicy(3), Run: func(ctx context.Context, args []byte) error {
		return get(ctx, srv.Client(), srv.URL+"/"+string(args))
	}}
	if err := rt.Register(def); err != nil {
		t.Fatal(err)
	}
	for code, attempts := range map[string]int{"404": 1, "503": 3} {
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(code)})
		if err != nil {
			t.Fatal(err)
		}
		task := waitState(t, rt, id, StateDead, 20*time.Second)
		if task.ExecuteTimes != attempts {
			t.Fatalf("HTTP %s: %d attempts, want %d", code, task.ExecuteTimes, attempts)
		}
	}
}

package runtime

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Retry-After values: seconds, an HTTP date, nothing readable; waits
// beyond MaxRetryAfter are capped, negative ones are 0.
func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"120", 2 * time.Minute, true},
		{" 0 ", 0, true},
		{"86400", MaxRetryAfter, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{"", 0, false},
		{"-5", 0, false},
		{"soon", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %s, %v; want %s, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	var ra *RetryAfterError
	if !errors.As(RetryAfter(errors.New("x"), 48*time.Hour), &ra) || ra.After != MaxRetryAfter {
		t.Errorf("RetryAfter of 48h: %v, want a wait of the cap %s", ra, MaxRetryAfter)
	}
	// An error built by hand is capped when the executor reads it.
	if d, ok := retryAfterOf(&RetryAfterError{After: 48 * time.Hour, Err: errors.New("x")}); !ok || d != MaxRetryAfter {
		t.Errorf("a RetryAfterError of 48h waits %s, want the cap %s", d, MaxRetryAfter)
	}
	if RetryAfter(nil, time.Second) != nil {
		t.Error("RetryAfter(nil) is not nil")
	}
}

// A real HTTP server's 429 and 503 with Retry-After become RetryAfter
// errors; a 503 without the header and a 500 stay as they are.
func TestRetryAfterResponse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/429":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/503":
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/503-bare":
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	for path, want := range map[string]time.Duration{"/429": 7 * time.Second, "/503": 3 * time.Second, "/503-bare": -1, "/500": -1} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := RetryAfterResponse(resp, nil)
		d, deferred := retryAfterOf(got)
		switch {
		case want < 0 && deferred:
			t.Errorf("%s: %v is a RetryAfter error", path, got)
		case want >= 0 && (!deferred || d != want):
			t.Errorf("%s: %v, want RetryAfter %s", path, got, want)
		}
	}
	other := errors.New("connection reset")
	if got := RetryAfterResponse(nil, other); got != other {
		t.Errorf("no response: %v", got)
	}
}

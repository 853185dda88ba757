package alertchannel

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// fakeWebhook accepts a WebhookBody with the expected Authorization header.
func fakeWebhook(t *testing.T) *fakeEndpoint {
	return newFakeEndpoint(t, `{}`, func(r request) string {
		if r.Header.Get("Authorization") != "Bearer hook-token" {
			return "no token"
		}
		var b WebhookBody
		dec := json.NewDecoder(strings.NewReader(string(r.Body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil {
			return "not a WebhookBody: " + err.Error()
		}
		if b.Event.TaskName == "" || b.Text == "" || b.Subject == "" || b.Count < 1 || len(b.TaskIDs) == 0 {
			return "incomplete WebhookBody"
		}
		return ""
	})
}

func newTestWebhook(t *testing.T, f *fakeEndpoint, opts Options) *Channel {
	t.Helper()
	c, err := NewWebhook(WebhookConfig{Options: opts, URL: f.srv.URL + "/hook", Header: http.Header{"Authorization": {"Bearer hook-token"}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func bodies(t *testing.T, f *fakeEndpoint) []WebhookBody {
	t.Helper()
	var out []WebhookBody
	for _, r := range f.requests() {
		var b WebhookBody
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func TestWebhookBody(t *testing.T) {
	f := fakeWebhook(t)
	c := newTestWebhook(t, f, Options{Name: "hook"})
	ev := alert("charge", 42, "503 from the gateway")
	ev.Exhausted, ev.WillRetry, ev.ShardKey, ev.AgeSeconds = true, false, 9, 12.5
	if err := c.Send(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	f.noRefusals()
	b := bodies(t, f)[0]
	want := WebhookEvent{TaskName: "charge", TaskID: 42, ExecuteTimes: 3, MaxAttempts: 5, LastError: "503 from the gateway",
		Exhausted: true, ShardKey: 9, AgeSeconds: 12.5, Expression: "executeTimes >= 3", At: ev.At}
	if b.Channel != "hook" || b.Summary || b.Count != 1 || b.Event != want || b.First != want || b.Last != want || len(b.TaskIDs) != 1 || b.TaskIDs[0] != 42 {
		t.Errorf("body = %+v", b)
	}
	if !strings.Contains(b.Text, "no attempt left") || b.Subject != "argo alert: charge" {
		t.Errorf("text %q, subject %q", b.Text, b.Subject)
	}
}

// A reply other than 2xx is a failed send, retried, then given up.
func TestWebhookHTTPErrorGivesUp(t *testing.T) {
	f := fakeWebhook(t)
	f.reply = func(int) (int, string) { return http.StatusBadGateway, "upstream down" }
	obs := &recorder{}
	c := newTestWebhook(t, f, Options{Observer: obs, Backoff: time.Millisecond, MaxAttempts: 4})
	err := c.Send(context.Background(), alert("charge", 1, "x"))
	if err == nil || !strings.Contains(err.Error(), "502") || !strings.Contains(err.Error(), "after 4 attempts") {
		t.Fatalf("Send = %v, want a give-up after 4 attempts quoting HTTP 502", err)
	}
	if f.callCount() != 4 || obs.get("webhook", OutcomeRetried) != 3 || obs.get("webhook", OutcomeFailed) != 1 || obs.get("webhook", OutcomeSent) != 0 {
		t.Errorf("calls %d retried %d failed %d sent %d; want 4 3 1 0", f.callCount(), obs.get("webhook", OutcomeRetried), obs.get("webhook", OutcomeFailed), obs.get("webhook", OutcomeSent))
	}
}

// A send slower than SendTimeout is abandoned and counted as a failed attempt.
func TestWebhookSendTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := newFakeEndpoint(t, `{}`, func(r request) string { return "" })
	srv.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	obs := &recorder{}
	c, err := NewWebhook(WebhookConfig{Options: Options{Observer: obs, SendTimeout: 50 * time.Millisecond, MaxAttempts: 2, Backoff: time.Millisecond}, URL: srv.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = c.Send(context.Background(), alert("slow", 1, "x"))
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("Send = %v, want a deadline error", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Send took %s with a 50ms SendTimeout", took)
	}
	if obs.get("webhook", OutcomeFailed) != 1 || obs.get("webhook", OutcomeRetried) != 1 {
		t.Errorf("failed %d retried %d, want 1 1", obs.get("webhook", OutcomeFailed), obs.get("webhook", OutcomeRetried))
	}
}

package alertchannel

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A burst of 1000 alerts of one name is one message at once and one
// summary when the window ends.
func TestBurstIsOneMessageAndOneSummary(t *testing.T) {
	f := fakeWebhook(t)
	obs := &recorder{}
	c := newTestWebhook(t, f, Options{Observer: obs, Window: time.Hour})
	timers := useManualTimers(c)
	ctx := context.Background()
	for i := range 1000 {
		if err := c.Send(ctx, alert("charge", int64(1000+i), "error "+string(rune('a'+i%26)))); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(f.requests()); got != 1 {
		t.Fatalf("%d messages during the window, want 1 (the first alert)", got)
	}
	if timers.started() != 1 {
		t.Fatalf("%d windows opened, want 1", timers.started())
	}
	timers.fire()
	f.noRefusals()
	b := bodies(t, f)
	if len(b) != 2 {
		t.Fatalf("%d messages after the window, want 2", len(b))
	}
	s := b[1]
	if !s.Summary || s.Count != 999 || s.First.TaskID != 1001 || s.Last.TaskID != 1999 || s.Last.LastError != "error "+string(rune('a'+999%26)) {
		t.Errorf("summary = summary %v count %d first %d last %d (%q)", s.Summary, s.Count, s.First.TaskID, s.Last.TaskID, s.Last.LastError)
	}
	if len(s.TaskIDs) != MaxSummaryTaskIDs || s.TaskIDs[0] != 1001 || s.MoreTaskIDs != 999-MaxSummaryTaskIDs {
		t.Errorf("summary task ids %v + %d more", s.TaskIDs, s.MoreTaskIDs)
	}
	for _, want := range []string{"999 more alerts for task charge within 1h0m0s", "first: task 1001", "last: task 1999", "tasks: 1001, 1002", "and 979 more"} {
		if !strings.Contains(s.Text, want) {
			t.Errorf("summary text %q lacks %q", s.Text, want)
		}
	}
	if obs.get("webhook", OutcomeGrouped) != 999 || obs.get("webhook", OutcomeSent) != 2 {
		t.Errorf("grouped %d sent %d, want 999 2", obs.get("webhook", OutcomeGrouped), obs.get("webhook", OutcomeSent))
	}
	// The next alert opens a new window and goes out at once.
	if err := c.Send(ctx, alert("charge", 5000, "again")); err != nil {
		t.Fatal(err)
	}
	if got := len(f.requests()); got != 3 {
		t.Errorf("%d messages, want 3: the window after the summary starts anew", got)
	}
}

// Two names do not share a window.
func TestNamesAreGroupedApart(t *testing.T) {
	f := fakeWebhook(t)
	c := newTestWebhook(t, f, Options{Window: time.Hour})
	timers := useManualTimers(c)
	ctx := context.Background()
	for i := range 10 {
		for _, name := range []string{"charge", "refund"} {
			if err := c.Send(ctx, alert(name, int64(i), "x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := len(f.requests()); got != 2 {
		t.Fatalf("%d messages at once, want 2 (one per name)", got)
	}
	timers.fire()
	counts := map[string]int{}
	for _, b := range bodies(t, f)[2:] {
		if !b.Summary || b.Count != 9 {
			t.Errorf("summary of %s: summary %v count %d, want 9", b.Event.TaskName, b.Summary, b.Count)
		}
		counts[b.Event.TaskName]++
	}
	if counts["charge"] != 1 || counts["refund"] != 1 {
		t.Errorf("summaries per name %v, want one each", counts)
	}
}

// A window with no further alert sends no summary.
func TestLoneAlertHasNoSummary(t *testing.T) {
	f := fakeWebhook(t)
	c := newTestWebhook(t, f, Options{Window: time.Hour})
	timers := useManualTimers(c)
	if err := c.Send(context.Background(), alert("charge", 1, "x")); err != nil {
		t.Fatal(err)
	}
	timers.fire()
	if got := len(f.requests()); got != 1 {
		t.Errorf("%d messages, want 1", got)
	}
}

// The window's real timer sends the summary when it ends.
func TestWindowTimerSendsSummary(t *testing.T) {
	f := fakeWebhook(t)
	const window = time.Second
	c := newTestWebhook(t, f, Options{Window: window})
	ctx := context.Background()
	start := time.Now()
	for i := range 3 {
		if err := c.Send(ctx, alert("charge", int64(i), "x")); err != nil {
			t.Fatal(err)
		}
	}
	if time.Since(start) >= window {
		t.Fatalf("three sends took longer than the %s window; the machine is too slow for this test", window)
	}
	waitFor(t, 10*time.Second, "no summary after the window", func() bool { return len(f.requests()) == 2 })
	b := bodies(t, f)
	if !b[1].Summary || b[1].Count != 2 {
		t.Errorf("second message: summary %v count %d, want a summary of 2", b[1].Summary, b[1].Count)
	}
	if gap := f.requests()[1].At.Sub(start); gap < window {
		t.Errorf("summary %s after the first alert, before the window's end", gap)
	}
}

// Close sends the open windows' summaries at once; Send then fails.
func TestCloseSendsSummaries(t *testing.T) {
	f := fakeWebhook(t)
	obs := &recorder{}
	c := newTestWebhook(t, f, Options{Window: time.Hour, Observer: obs})
	ctx := context.Background()
	for i := range 5 {
		if err := c.Send(ctx, alert("charge", int64(i), "x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	b := bodies(t, f)
	if len(b) != 2 || !b[1].Summary || b[1].Count != 4 {
		t.Fatalf("after Close: %d messages, want the alert and a summary of 4", len(b))
	}
	if err := c.Send(ctx, alert("charge", 9, "x")); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close = %v, want ErrClosed", err)
	}
	if obs.get("webhook", OutcomeDropped) != 1 {
		t.Errorf("dropped = %d, want 1", obs.get("webhook", OutcomeDropped))
	}
}

// The channel-wide rate limit drops the messages over it.
func TestRateLimitDrops(t *testing.T) {
	f := fakeWebhook(t)
	obs := &recorder{}
	c := newTestWebhook(t, f, Options{Window: -1, RateLimit: 3, Observer: obs})
	var refused int
	for i := range 5 {
		err := c.Send(context.Background(), alert("charge", int64(i), "x"))
		if err != nil {
			if !strings.Contains(err.Error(), "rate limit of 3 messages a minute") {
				t.Errorf("Send = %v, want a rate-limit error", err)
			}
			refused++
		}
	}
	if got := len(f.requests()); got != 3 || refused != 2 || obs.get("webhook", OutcomeDropped) != 2 {
		t.Errorf("delivered %d, refused %d, dropped %d; want 3, 2, 2", got, refused, obs.get("webhook", OutcomeDropped))
	}
}

func TestRateLimiterSlides(t *testing.T) {
	l := &rateLimiter{perMinute: 2}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, c := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {10 * time.Second, true}, {20 * time.Second, false}, {60 * time.Second, true}, {65 * time.Second, false}, {70 * time.Second, true}} {
		if got := l.allow(t0.Add(c.at)); got != c.want {
			t.Errorf("#%d at %s: allow = %v, want %v", i, c.at, got, c.want)
		}
	}
}

// Without grouping (Window < 0) every alert is a message.
func TestNoGrouping(t *testing.T) {
	f := fakeWebhook(t)
	c := newTestWebhook(t, f, Options{Window: -1})
	for i := range 5 {
		if err := c.Send(context.Background(), alert("charge", int64(i), "x")); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(f.requests()); got != 5 {
		t.Errorf("%d messages, want 5", got)
	}
}

func TestTemplateErrorsAtConstruction(t *testing.T) {
	for _, c := range []struct {
		opts Options
		want []string
	}{
		{Options{Template: "{{.TaskName"}, []string{"webhook Template", "unclosed action"}},
		{Options{Template: "{{.TaskNme}}"}, []string{"webhook Template does not render an alert", "TaskNme"}},
		{Options{Template: "{{.First.Nope}}"}, []string{"webhook Template does not render an alert", "Nope"}},
		{Options{Subject: "{{if}}"}, []string{"webhook Subject", "missing value for if"}},
	} {
		_, err := NewWebhook(WebhookConfig{Options: c.opts, URL: "http://127.0.0.1:1/hook"})
		if err == nil {
			t.Errorf("%+v: no error", c.opts)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %q lacks %q", c.opts, err, w)
			}
		}
	}
}

// A custom template sees Message's fields.
func TestCustomTemplate(t *testing.T) {
	f := fakeWebhook(t)
	c := newTestWebhook(t, f, Options{Template: "[{{.Channel}}] {{.TaskName}}#{{.TaskID}}: {{.LastError}} ({{.Count}})", Subject: "S {{.TaskName}}"})
	if err := c.Send(context.Background(), alert("charge", 3, "boom")); err != nil {
		t.Fatal(err)
	}
	if b := bodies(t, f)[0]; b.Text != "[webhook] charge#3: boom (1)" || b.Subject != "S charge" {
		t.Errorf("text %q subject %q", b.Text, b.Subject)
	}
}

// An endpoint that cannot be reached fails without the webhook URL (which
// carries the robot's token) in the error.
func TestErrorHidesURL(t *testing.T) {
	c, err := NewDingTalk(DingTalkConfig{Options: Options{MaxAttempts: 1}, WebhookURL: "http://127.0.0.1:1/robot/send?access_token=SECRET-TOKEN"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Send(context.Background(), alert("charge", 1, "x"))
	if err == nil || strings.Contains(err.Error(), "SECRET-TOKEN") {
		t.Errorf("Send = %v, want an error without the token", err)
	}
}

func TestTruncate(t *testing.T) {
	if got := truncate("héllo wörld", 8); got != "héll…" || len(got) > 8 {
		t.Errorf("truncate = %q (%d bytes)", got, len(got))
	}
	if got := truncate("short", 8); got != "short" {
		t.Errorf("truncate = %q", got)
	}
}

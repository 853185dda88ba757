package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/argo-retry/argo/alertchannel"
	"github.com/argo-retry/argo/argotype"
)

// A channel's outcomes are counted in argo_alert_channel_messages_total.
func TestAlertChannelOutcomesCounted(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	m := New(Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	quiet := slog.New(slog.DiscardHandler)
	failing, err := alertchannel.NewWebhook(alertchannel.WebhookConfig{URL: down.URL,
		Options: alertchannel.Options{Name: "pager", Observer: m, Backoff: time.Millisecond, Window: -1, RateLimit: 1, Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	working, err := alertchannel.NewWebhook(alertchannel.WebhookConfig{URL: up.URL,
		Options: alertchannel.Options{Name: "hook", Observer: m, Window: time.Hour, Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	ev := argotype.AlertEvent{AlertEnv: argotype.AlertEnv{TaskName: "charge", TaskID: 1}}
	ctx := context.Background()
	if err := failing.Send(ctx, ev); err == nil {
		t.Fatal("a send to a failing endpoint succeeded")
	}
	if err := failing.Send(ctx, ev); err == nil { // over its rate limit of 1 a minute
		t.Fatal("a send over the rate limit succeeded")
	}
	for range 3 {
		if err := working.Send(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := working.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP argo_alert_channel_messages_total ` + alertChannelHelp + `
# TYPE argo_alert_channel_messages_total counter
argo_alert_channel_messages_total{channel="hook",outcome="grouped"} 2
argo_alert_channel_messages_total{channel="hook",outcome="sent"} 2
argo_alert_channel_messages_total{channel="pager",outcome="dropped"} 1
argo_alert_channel_messages_total{channel="pager",outcome="failed"} 1
argo_alert_channel_messages_total{channel="pager",outcome="retried"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "argo_alert_channel_messages_total"); err != nil {
		t.Error(err)
	}
}

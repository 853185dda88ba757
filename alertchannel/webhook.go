package alertchannel

import (
	"context"
	"net/http"
	"time"

	"github.com/argo-retry/argo/argotype"
)

// WebhookConfig configures NewWebhook.
type WebhookConfig struct {
	Options
	// URL receives a POST of a WebhookBody as JSON. Required.
	URL string
	// Header is added to every request (an Authorization header, say).
	Header http.Header
}

// WebhookBody is the JSON a webhook channel posts. A reply with a status
// other than 2xx is a failed send.
type WebhookBody struct {
	Channel string `json:"channel"`
	// Summary is true for the message sent when a grouping window ends;
	// Count is then the alerts it groups, First and Last the first and last
	// of them.
	Summary bool         `json:"summary"`
	Count   int          `json:"count"`
	Subject string       `json:"subject"` // Options.Subject rendered
	Text    string       `json:"text"`    // Options.Template rendered
	Event   WebhookEvent `json:"event"`   // the alert (a summary's last)
	First   WebhookEvent `json:"first"`
	Last    WebhookEvent `json:"last"`
	// TaskIDs are the tasks the message is about (at most
	// MaxSummaryTaskIDs; MoreTaskIDs counts the rest).
	TaskIDs     []int64 `json:"taskIds"`
	MoreTaskIDs int     `json:"moreTaskIds"`
}

// WebhookEvent is an argotype.AlertEvent in a WebhookBody, with the alert
// expression's field names.
type WebhookEvent struct {
	TaskName     string    `json:"taskName"`
	TaskID       int64     `json:"taskId"`
	ExecuteTimes int       `json:"executeTimes"`
	MaxAttempts  int       `json:"maxAttempts"`
	LastError    string    `json:"lastError"`
	Permanent    bool      `json:"permanent"`
	WillRetry    bool      `json:"willRetry"`
	Exhausted    bool      `json:"exhausted"`
	ShardKey     int       `json:"shardKey"`
	AgeSeconds   float64   `json:"ageSeconds"`
	Expression   string    `json:"expression"`
	At           time.Time `json:"at"`
}

func webhookEvent(ev argotype.AlertEvent) WebhookEvent {
	return WebhookEvent{
		TaskName: ev.TaskName, TaskID: ev.TaskID, ExecuteTimes: ev.ExecuteTimes, MaxAttempts: ev.MaxAttempts,
		LastError: ev.LastError, Permanent: ev.Permanent, WillRetry: ev.WillRetry, Exhausted: ev.Exhausted,
		ShardKey: ev.ShardKey, AgeSeconds: ev.AgeSeconds, Expression: ev.Expression, At: ev.At,
	}
}

// NewWebhook returns a channel that posts each message as a WebhookBody.
// It has no rate limit by default.
func NewWebhook(cfg WebhookConfig) (*Channel, error) {
	if err := checkURL("webhook", cfg.URL); err != nil {
		return nil, err
	}
	header := cfg.Header.Clone()
	var c *Channel
	c, err := newChannel("webhook", cfg.Options, DefaultTemplate, -1, func(ctx context.Context, m rendered) error {
		body := WebhookBody{
			Channel: m.Channel, Summary: m.Summary, Count: m.Count, Subject: m.Subject, Text: m.Text,
			Event: webhookEvent(m.AlertEvent), First: webhookEvent(m.First), Last: webhookEvent(m.Last),
			TaskIDs: m.TaskIDs, MoreTaskIDs: m.MoreTaskIDs,
		}
		_, err := postJSON(ctx, c.opts.HTTPClient, cfg.URL, body, header)
		return err
	})
	return c, err
}

package alertchannel

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FeishuRateLimit is the messages a minute a Feishu/Lark custom bot
// accepts, the default Options.RateLimit of NewFeishu.
const FeishuRateLimit = 100

// feishuMaxText bounds a message's text, in bytes (the platform takes a
// request of at most 20 KB).
const feishuMaxText = 18000

// FeishuConfig configures NewFeishu, for a Feishu or Lark group's custom bot.
type FeishuConfig struct {
	Options
	// WebhookURL is the bot's webhook URL, as Feishu/Lark shows it. Required.
	WebhookURL string
	// Secret is the bot's signing secret when "signature verification" is
	// on: each body then carries timestamp and sign. "" otherwise.
	Secret string
	// Post sends rich-text "post" messages (title: Options.Subject, one
	// paragraph per line) instead of text. Default text.
	Post bool
}

// feishuReply is a Feishu/Lark bot's reply: code != 0 (or, from older
// endpoints, StatusCode != 0) is a refusal (19021: bad signature, …).
type feishuReply struct {
	Code       *int   `json:"code"`
	Msg        string `json:"msg"`
	StatusCode *int   `json:"StatusCode"`
}

// NewFeishu returns a channel that posts to a Feishu/Lark custom bot. Its
// default rate limit is FeishuRateLimit.
func NewFeishu(cfg FeishuConfig) (*Channel, error) {
	if err := checkURL("feishu", cfg.WebhookURL); err != nil {
		return nil, err
	}
	var c *Channel
	c, err := newChannel("feishu", cfg.Options, DefaultTemplate, FeishuRateLimit, func(ctx context.Context, m rendered) error {
		text := truncate(m.Text, feishuMaxText)
		body := map[string]any{}
		if cfg.Post {
			var paragraphs [][]map[string]string
			for _, line := range strings.Split(text, "\n") {
				paragraphs = append(paragraphs, []map[string]string{{"tag": "text", "text": line}})
			}
			body["msg_type"] = "post"
			body["content"] = map[string]any{"post": map[string]any{"zh_cn": map[string]any{"title": m.Subject, "content": paragraphs}}}
		} else {
			body["msg_type"] = "text"
			body["content"] = map[string]string{"text": text}
		}
		if cfg.Secret != "" {
			body["timestamp"], body["sign"] = feishuSign(cfg.Secret, time.Now())
		}
		reply, err := postJSON(ctx, c.opts.HTTPClient, cfg.WebhookURL, body, nil)
		if err != nil {
			return err
		}
		var r feishuReply
		if err := json.Unmarshal(reply, &r); err != nil || (r.Code == nil && r.StatusCode == nil) {
			return fmt.Errorf("feishu: unexpected reply %q", truncate(string(reply), 200))
		}
		if r.Code != nil && *r.Code != 0 {
			return fmt.Errorf("feishu: code %d: %s", *r.Code, r.Msg)
		}
		if r.StatusCode != nil && *r.StatusCode != 0 {
			return fmt.Errorf("feishu: StatusCode %d", *r.StatusCode)
		}
		return nil
	})
	return c, err
}

// feishuSign returns Feishu's timestamp (seconds) and signature:
// HMAC-SHA256 keyed with "timestamp\nsecret" over an empty message, in base64.
func feishuSign(secret string, now time.Time) (timestamp, sign string) {
	timestamp = strconv.FormatInt(now.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(timestamp+"\n"+secret))
	return timestamp, base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

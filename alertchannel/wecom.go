package alertchannel

import (
	"context"
	"fmt"
	"net/url"
)

// WeComRateLimit is the messages a minute a WeCom group robot accepts, the
// default Options.RateLimit of NewWeCom.
const WeComRateLimit = 20

// WeCom's limits on a message's content, in bytes.
const (
	weComMaxText     = 2048
	weComMaxMarkdown = 4096
)

// WeComConfig configures NewWeCom, for a WeCom (企业微信) group robot.
type WeComConfig struct {
	Options
	// WebhookURL is the robot's webhook URL with its key= parameter, as
	// WeCom shows it. Required.
	WebhookURL string
	// Markdown sends markdown messages instead of text. Default text.
	Markdown bool
	// MentionedMobiles are the phone numbers of members to @ (text
	// messages only; "@all" for everyone).
	MentionedMobiles []string
}

// NewWeCom returns a channel that posts to a WeCom group robot. Its
// default rate limit is WeComRateLimit. A reply with errcode != 0 is a
// failed send.
func NewWeCom(cfg WeComConfig) (*Channel, error) {
	if err := checkURL("wecom", cfg.WebhookURL); err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.WebhookURL)
	if err != nil || u.Query().Get("key") == "" {
		return nil, fmt.Errorf("alertchannel: wecom WebhookURL has no key= parameter: use the whole URL the robot's page shows")
	}
	tmpl := DefaultTemplate
	if cfg.Markdown {
		tmpl = DefaultMarkdownTemplate
	}
	var c *Channel
	c, err = newChannel("wecom", cfg.Options, tmpl, WeComRateLimit, func(ctx context.Context, m rendered) error {
		var body map[string]any
		if cfg.Markdown {
			body = map[string]any{"msgtype": "markdown", "markdown": map[string]any{"content": truncate(m.Text, weComMaxMarkdown)}}
		} else {
			text := map[string]any{"content": truncate(m.Text, weComMaxText)}
			if len(cfg.MentionedMobiles) > 0 {
				text["mentioned_mobile_list"] = cfg.MentionedMobiles
			}
			body = map[string]any{"msgtype": "text", "text": text}
		}
		reply, err := postJSON(ctx, c.opts.HTTPClient, cfg.WebhookURL, body, nil)
		if err != nil {
			return err
		}
		return checkErrCode("wecom", reply)
	})
	return c, err
}

package alertchannel

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// DingTalkRateLimit is the messages a minute a DingTalk robot accepts, the
// default Options.RateLimit of NewDingTalk.
const DingTalkRateLimit = 20

// dingTalkMaxText bounds a message's text, in bytes.
const dingTalkMaxText = 18000

// DefaultMarkdownTemplate is the message body of markdown messages
// (DingTalk, WeCom) when Options.Template is empty.
const DefaultMarkdownTemplate = `{{if .Summary -}}
### argo: {{.Count}} more alert{{if ne .Count 1}}s{{end}} for task {{.TaskName}} within {{.Window}}
- first: task {{.First.TaskID}}, attempt {{.First.ExecuteTimes}}: {{.First.LastError}}
- last: task {{.Last.TaskID}}, attempt {{.Last.ExecuteTimes}}: {{.Last.LastError}}
- tasks: {{range $i, $id := .TaskIDs}}{{if $i}}, {{end}}{{$id}}{{end}}{{if .MoreTaskIDs}} and {{.MoreTaskIDs}} more{{end}}
{{- else -}}
### argo alert: task {{.TaskName}}
- task id: {{.TaskID}}
- attempt: {{.ExecuteTimes}}{{if .MaxAttempts}} of {{.MaxAttempts}}{{end}}
- error: {{.LastError}}
- {{if .Exhausted}}no attempt left{{else if .WillRetry}}it will be retried{{else}}it will not be retried{{end}}
- rule: {{.Expression}}
{{- end}}`

// DingTalkConfig configures NewDingTalk, for a DingTalk group's custom robot.
type DingTalkConfig struct {
	Options
	// WebhookURL is the robot's webhook URL with its access_token, as
	// DingTalk shows it. Required.
	WebhookURL string
	// Secret is the robot's signing secret ("SEC…") when its security
	// setting is "sign": each request then carries timestamp and sign query
	// parameters. "" for a robot secured by keyword or IP (a keyword must
	// then appear in the template).
	Secret string
	// Markdown sends markdown messages (title: Options.Subject) instead of
	// text. Default text.
	Markdown bool
	// AtMobiles are the phone numbers of members to @; AtAll @s everyone.
	AtMobiles []string
	AtAll     bool
}

// dingTalkReply is a DingTalk robot's reply: HTTP 200 with errcode != 0 is
// a refusal (310000: signature or keyword, 130101: too fast, …).
type dingTalkReply struct {
	ErrCode *int   `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
}

// NewDingTalk returns a channel that posts to a DingTalk robot. Its
// default rate limit is DingTalkRateLimit.
func NewDingTalk(cfg DingTalkConfig) (*Channel, error) {
	if err := checkURL("dingtalk", cfg.WebhookURL); err != nil {
		return nil, err
	}
	base, err := url.Parse(cfg.WebhookURL)
	if err != nil {
		return nil, fmt.Errorf("alertchannel: dingtalk WebhookURL does not parse")
	}
	tmpl := DefaultTemplate
	if cfg.Markdown {
		tmpl = DefaultMarkdownTemplate
	}
	var c *Channel
	c, err = newChannel("dingtalk", cfg.Options, tmpl, DingTalkRateLimit, func(ctx context.Context, m rendered) error {
		u := *base
		if cfg.Secret != "" {
			q := u.Query()
			ts, sign := dingTalkSign(cfg.Secret, time.Now())
			q.Set("timestamp", ts)
			q.Set("sign", sign)
			u.RawQuery = q.Encode() // URL-encodes the signature
		}
		text := truncate(m.Text, dingTalkMaxText)
		body := map[string]any{
			"at": map[string]any{"atMobiles": cfg.AtMobiles, "isAtAll": cfg.AtAll},
		}
		if cfg.Markdown {
			body["msgtype"] = "markdown"
			body["markdown"] = map[string]string{"title": m.Subject, "text": text}
		} else {
			body["msgtype"] = "text"
			body["text"] = map[string]string{"content": text}
		}
		reply, err := postJSON(ctx, c.opts.HTTPClient, u.String(), body, nil)
		if err != nil {
			return err
		}
		return checkErrCode("dingtalk", reply)
	})
	return c, err
}

// dingTalkSign returns DingTalk's timestamp (milliseconds) and signature:
// HMAC-SHA256 keyed with the secret over "timestamp\nsecret", in base64
// (the caller URL-encodes it).
func dingTalkSign(secret string, now time.Time) (timestamp, sign string) {
	timestamp = strconv.FormatInt(now.UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp + "\n" + secret))
	return timestamp, base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// checkErrCode reads a DingTalk or WeCom reply: errcode must be present and 0.
func checkErrCode(kind string, reply []byte) error {
	var r dingTalkReply
	if err := json.Unmarshal(reply, &r); err != nil || r.ErrCode == nil {
		return fmt.Errorf("%s: unexpected reply %q", kind, truncate(string(reply), 200))
	}
	if *r.ErrCode != 0 {
		return fmt.Errorf("%s: errcode %d: %s", kind, *r.ErrCode, r.ErrMsg)
	}
	return nil
}

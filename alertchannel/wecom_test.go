package alertchannel

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fakeWeCom checks requests as a WeCom group robot does: key= in the URL,
// a text message (content at most 2048 bytes) or a markdown one (4096).
func fakeWeCom(t *testing.T) *fakeEndpoint {
	return newFakeEndpoint(t, `{"errcode":0,"errmsg":"ok"}`, func(r request) string {
		if r.Query.Get("key") != "k-123" {
			return `{"errcode":93000,"errmsg":"invalid webhook url"}`
		}
		m := decode(t, r.Body)
		var content string
		limit := 0
		switch m["msgtype"] {
		case "text":
			content, _ = path(m, "text", "content").(string)
			limit = 2048
		case "markdown":
			content, _ = path(m, "markdown", "content").(string)
			limit = 4096
		default:
			return `{"errcode":40008,"errmsg":"invalid message type"}`
		}
		if content == "" || len(content) > limit || !utf8.ValidString(content) {
			return `{"errcode":40058,"errmsg":"content exceed max length or empty"}`
		}
		return ""
	})
}

func TestWeComText(t *testing.T) {
	f := fakeWeCom(t)
	c, err := NewWeCom(WeComConfig{WebhookURL: f.srv.URL + "/cgi-bin/webhook/send?key=k-123", MentionedMobiles: []string{"@all"}})
	if err != nil {
		t.Fatal(err)
	}
	// A long error is cut to the platform's 2048 bytes, at a rune boundary.
	if err := c.Send(context.Background(), alert("支付", 5, strings.Repeat("超时", 1000))); err != nil {
		t.Fatal(err)
	}
	f.noRefusals()
	m := decode(t, f.requests()[0].Body)
	text := path(m, "text", "content").(string)
	if !strings.Contains(text, "task 支付 (id 5)") || !strings.HasSuffix(text, "…") {
		t.Errorf("content = %q", text)
	}
	if got := path(m, "text", "mentioned_mobile_list"); got == nil || got.([]any)[0] != "@all" {
		t.Errorf("mentioned_mobile_list = %v", got)
	}
}

func TestWeComMarkdown(t *testing.T) {
	f := fakeWeCom(t)
	c, err := NewWeCom(WeComConfig{WebhookURL: f.srv.URL + "/cgi-bin/webhook/send?key=k-123", Markdown: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(context.Background(), alert("pay", 5, "boom")); err != nil {
		t.Fatal(err)
	}
	f.noRefusals()
	m := decode(t, f.requests()[0].Body)
	if !strings.Contains(path(m, "markdown", "content").(string), "### argo alert: task pay") {
		t.Errorf("body = %s", f.requests()[0].Body)
	}
}

// WeCom answers HTTP 200 with errcode != 0: a failure, retried, then given up.
func TestWeComErrcodeFails(t *testing.T) {
	f := fakeWeCom(t)
	f.reply = func(int) (int, string) { return 200, `{"errcode":45009,"errmsg":"api freq out of limit"}` }
	obs := &recorder{}
	c, err := NewWeCom(WeComConfig{Options: Options{Observer: obs, Backoff: time.Millisecond}, WebhookURL: f.srv.URL + "/send?key=k-123"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Send(context.Background(), alert("pay", 5, "boom"))
	if err == nil || !strings.Contains(err.Error(), "wecom: errcode 45009: api freq out of limit") {
		t.Fatalf("Send = %v, want the errcode", err)
	}
	if f.callCount() != 3 || obs.get("wecom", OutcomeRetried) != 2 || obs.get("wecom", OutcomeFailed) != 1 {
		t.Errorf("calls %d retried %d failed %d, want 3 2 1", f.callCount(), obs.get("wecom", OutcomeRetried), obs.get("wecom", OutcomeFailed))
	}
}

func TestWeComNeedsKey(t *testing.T) {
	_, err := NewWeCom(WeComConfig{WebhookURL: "http://127.0.0.1:1/cgi-bin/webhook/send"})
	if err == nil || !strings.Contains(err.Error(), "key=") {
		t.Errorf("NewWeCom without key = %v, want an error naming key=", err)
	}
}

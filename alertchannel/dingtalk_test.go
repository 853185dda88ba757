package alertchannel

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"
	"time"
)

const dingSecret = "SECtest0123456789abcdef"

// fakeDingTalk checks requests as a DingTalk robot with the "sign" security
// setting does: access_token kept, timestamp within an hour, sign the
// URL-encoded base64 of HMAC-SHA256(secret, timestamp+"\n"+secret), and a
// text or markdown message. It answers errcode 310000 otherwise.
func fakeDingTalk(t *testing.T) *fakeEndpoint {
	return newFakeEndpoint(t, `{"errcode":0,"errmsg":"ok"}`, func(r request) string {
		const refused = `{"errcode":310000,"errmsg":"sign not match"}`
		if r.Query.Get("access_token") != "tok" {
			return `{"errcode":300001,"errmsg":"token is not exist"}`
		}
		ts := r.Query.Get("timestamp")
		ms, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || time.Since(time.UnixMilli(ms)).Abs() > time.Hour {
			return refused
		}
		mac := hmac.New(sha256.New, []byte(dingSecret))
		mac.Write([]byte(ts + "\n" + dingSecret))
		// r.Query is decoded: a sign sent without URL-encoding loses its '+'.
		if r.Query.Get("sign") != base64.StdEncoding.EncodeToString(mac.Sum(nil)) {
			return refused
		}
		m := decode(t, r.Body)
		switch m["msgtype"] {
		case "text":
			if s, _ := path(m, "text", "content").(string); s == "" {
				return `{"errcode":40035,"errmsg":"missing text.content"}`
			}
		case "markdown":
			title, _ := path(m, "markdown", "title").(string)
			text, _ := path(m, "markdown", "text").(string)
			if title == "" || text == "" {
				return `{"errcode":40035,"errmsg":"missing markdown title or text"}`
			}
		default:
			return `{"errcode":40035,"errmsg":"bad msgtype"}`
		}
		return ""
	})
}

func newTestDingTalk(t *testing.T, f *fakeEndpoint, markdown bool, obs Observer) *Channel {
	t.Helper()
	c, err := NewDingTalk(DingTalkConfig{
		Options:    Options{Observer: obs, Backoff: time.Millisecond},
		WebhookURL: f.srv.URL + "/robot/send?access_token=tok",
		Secret:     dingSecret,
		Markdown:   markdown,
		AtMobiles:  []string{"13800000000"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDingTalkSignedText(t *testing.T) {
	f := fakeDingTalk(t)
	obs := &recorder{}
	c := newTestDingTalk(t, f, false, obs)
	// Many sends: some signatures hold '+', '/' or '=' and must be URL-encoded.
	for i := range 20 {
		if err := c.Send(context.Background(), alert("pay-"+strconv.Itoa(i), int64(100+i), "connection refused")); err != nil {
			t.Fatal(err)
		}
	}
	f.noRefusals()
	reqs := f.requests()
	if len(reqs) != 20 {
		t.Fatalf("the robot got %d messages, want 20", len(reqs))
	}
	m := decode(t, reqs[0].Body)
	text := path(m, "text", "content").(string)
	for _, want := range []string{"task pay-0 (id 100) failed attempt 3 of 5", "error: connection refused", "it will be retried", "rule: executeTimes >= 3"} {
		if !strings.Contains(text, want) {
			t.Errorf("text %q lacks %q", text, want)
		}
	}
	if got := path(m, "at", "atMobiles"); got == nil || got.([]any)[0] != "13800000000" {
		t.Errorf("at.atMobiles = %v", got)
	}
	if obs.get("dingtalk", OutcomeSent) != 20 {
		t.Errorf("sent = %d, want 20", obs.get("dingtalk", OutcomeSent))
	}
}

func TestDingTalkMarkdown(t *testing.T) {
	f := fakeDingTalk(t)
	c := newTestDingTalk(t, f, true, nil)
	if err := c.Send(context.Background(), alert("pay", 7, "boom")); err != nil {
		t.Fatal(err)
	}
	f.noRefusals()
	m := decode(t, f.requests()[0].Body)
	if m["msgtype"] != "markdown" || path(m, "markdown", "title") != "argo alert: pay" || !strings.Contains(path(m, "markdown", "text").(string), "### argo alert: task pay") {
		t.Errorf("markdown message = %s", f.requests()[0].Body)
	}
}

// A wrong secret is refused by the robot (errcode 310000 with HTTP 200):
// the send fails after its retries.
func TestDingTalkWrongSecretFails(t *testing.T) {
	f := fakeDingTalk(t)
	obs := &recorder{}
	c, err := NewDingTalk(DingTalkConfig{
		Options:    Options{Observer: obs, Backoff: time.Millisecond},
		WebhookURL: f.srv.URL + "/robot/send?access_token=tok",
		Secret:     "SECwrong",
	})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Send(context.Background(), alert("pay", 1, "boom"))
	if err == nil || !strings.Contains(err.Error(), "errcode 310000") || !strings.Contains(err.Error(), "gave up after 3 attempts") {
		t.Fatalf("Send = %v, want a give-up after 3 attempts naming errcode 310000", err)
	}
	if f.callCount() != DefaultMaxAttempts || obs.get("dingtalk", OutcomeFailed) != 1 || obs.get("dingtalk", OutcomeRetried) != 2 {
		t.Errorf("calls %d, failed %d, retried %d; want 3, 1, 2", f.callCount(), obs.get("dingtalk", OutcomeFailed), obs.get("dingtalk", OutcomeRetried))
	}
}

// errcode != 0 with HTTP 200 is a failure, retried with backoff until the
// robot takes the message.
func TestDingTalkErrcodeRetried(t *testing.T) {
	f := fakeDingTalk(t)
	f.reply = func(n int) (int, string) {
		if n <= 2 {
			return 200, `{"errcode":130101,"errmsg":"send too fast"}`
		}
		return 200, `{"errcode":0,"errmsg":"ok"}`
	}
	obs := &recorder{}
	c, err := NewDingTalk(DingTalkConfig{
		Options:    Options{Observer: obs, Backoff: 20 * time.Millisecond},
		WebhookURL: f.srv.URL + "/robot/send?access_token=tok",
		Secret:     dingSecret,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(context.Background(), alert("pay", 1, "boom")); err != nil {
		t.Fatalf("Send = %v, want delivered at the third attempt", err)
	}
	reqs := f.requests()
	if len(reqs) != 3 || obs.get("dingtalk", OutcomeRetried) != 2 || obs.get("dingtalk", OutcomeSent) != 1 || obs.get("dingtalk", OutcomeFailed) != 0 {
		t.Fatalf("requests %d, retried %d, sent %d, failed %d; want 3, 2, 1, 0", len(reqs), obs.get("dingtalk", OutcomeRetried), obs.get("dingtalk", OutcomeSent), obs.get("dingtalk", OutcomeFailed))
	}
	// Exponential backoff: 20ms, then 40ms.
	if gap := reqs[1].At.Sub(reqs[0].At); gap < 20*time.Millisecond {
		t.Errorf("first retry after %s, want >= 20ms", gap)
	}
	if gap := reqs[2].At.Sub(reqs[1].At); gap < 40*time.Millisecond {
		t.Errorf("second retry after %s, want >= 40ms", gap)
	}
}

func TestDingTalkConfigErrors(t *testing.T) {
	for _, cfg := range []DingTalkConfig{
		{WebhookURL: ""},
		{WebhookURL: "ftp://x/robot"},
	} {
		if _, err := NewDingTalk(cfg); err == nil || !strings.Contains(err.Error(), "WebhookURL") {
			t.Errorf("NewDingTalk(%+v) = %v, want a WebhookURL error", cfg, err)
		}
	}
}

// A reply that is not DingTalk's (a proxy's page, JSON without errcode) is
// a failed send, not a delivery.
func TestDingTalkUnexpectedReplyFails(t *testing.T) {
	for _, reply := range []string{`<html>gateway</html>`, `{"status":"ok"}`} {
		f := fakeDingTalk(t)
		f.reply = func(int) (int, string) { return 200, reply }
		obs := &recorder{}
		c, err := NewDingTalk(DingTalkConfig{Options: Options{Observer: obs, MaxAttempts: 1}, WebhookURL: f.srv.URL + "/robot/send?access_token=tok", Secret: dingSecret})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Send(context.Background(), alert("pay", 1, "boom"))
		if err == nil || !strings.Contains(err.Error(), "unexpected reply") || obs.get("dingtalk", OutcomeFailed) != 1 {
			t.Errorf("reply %s: Send = %v, failed %d; want an unexpected-reply failure", reply, err, obs.get("dingtalk", OutcomeFailed))
		}
	}
}

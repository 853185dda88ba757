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

const feishuSecret = "fs-secret-42"

// fakeFeishu checks requests as a Feishu/Lark custom bot with signature
// verification does: timestamp (seconds, within an hour) and sign in the
// body, sign the base64 of HMAC-SHA256 keyed with timestamp+"\n"+secret
// over nothing, and a text or post message. It answers code 19021 otherwise.
func fakeFeishu(t *testing.T) *fakeEndpoint {
	return newFakeEndpoint(t, `{"code":0,"msg":"success","data":{}}`, func(r request) string {
		const refused = `{"code":19021,"msg":"sign match fail or timestamp is not within one hour from current time","data":{}}`
		m := decode(t, r.Body)
		ts, _ := m["timestamp"].(string)
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || time.Since(time.Unix(sec, 0)).Abs() > time.Hour {
			return refused
		}
		mac := hmac.New(sha256.New, []byte(ts+"\n"+feishuSecret))
		if m["sign"] != base64.StdEncoding.EncodeToString(mac.Sum(nil)) {
			return refused
		}
		switch m["msg_type"] {
		case "text":
			if s, _ := path(m, "content", "text").(string); s == "" {
				return `{"code":9499,"msg":"Bad Request"}`
			}
		case "post":
			post, _ := path(m, "content", "post", "zh_cn").(map[string]any)
			if post == nil || post["title"] == "" || post["content"] == nil {
				return `{"code":9499,"msg":"Bad Request"}`
			}
			for _, para := range post["content"].([]any) {
				for _, el := range para.([]any) {
					if el.(map[string]any)["tag"] != "text" {
						return `{"code":9499,"msg":"Bad Request"}`
					}
				}
			}
		default:
			return `{"code":9499,"msg":"Bad Request"}`
		}
		return ""
	})
}

func TestFeishuSignedText(t *testing.T) {
	f := fakeFeishu(t)
	c, err := NewFeishu(FeishuConfig{WebhookURL: f.srv.URL + "/open-apis/bot/v2/hook/abc", Secret: feishuSecret})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(context.Background(), alert("pay", 8, "boom")); err != nil {
		t.Fatal(err)
	}
	f.noRefusals()
	m := decode(t, f.requests()[0].Body)
	if !strings.Contains(path(m, "content", "text").(string), "task pay (id 8)") {
		t.Errorf("body = %s", f.requests()[0].Body)
	}
}

func TestFeishuPost(t *testing.T) {
	f := fakeFeishu(t)
	c, err := NewFeishu(FeishuConfig{WebhookURL: f.srv.URL + "/hook", Secret: feishuSecret, Post: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(context.Background(), alert("pay", 8, "boom")); err != nil {
		t.Fatal(err)
	}
	f.noRefusals()
	post := path(decode(t, f.requests()[0].Body), "content", "post", "zh_cn").(map[string]any)
	paras := post["content"].([]any)
	if post["title"] != "argo alert: pay" || len(paras) != 4 {
		t.Errorf("post = %v, want the subject as title and 4 paragraphs", post)
	}
}

// Feishu's code != 0 is a failure: a wrong secret gives up after retries.
func TestFeishuCodeFails(t *testing.T) {
	f := fakeFeishu(t)
	obs := &recorder{}
	c, err := NewFeishu(FeishuConfig{Options: Options{Observer: obs, Backoff: time.Millisecond, Name: "lark"}, WebhookURL: f.srv.URL + "/hook", Secret: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Send(context.Background(), alert("pay", 8, "boom"))
	if err == nil || !strings.Contains(err.Error(), "feishu: code 19021") {
		t.Fatalf("Send = %v, want code 19021", err)
	}
	if f.callCount() != 3 || obs.get("lark", OutcomeFailed) != 1 || obs.get("lark", OutcomeRetried) != 2 {
		t.Errorf("calls %d failed %d retried %d, want 3 1 2", f.callCount(), obs.get("lark", OutcomeFailed), obs.get("lark", OutcomeRetried))
	}
}

// An older endpoint answers StatusCode instead of code.
func TestFeishuStatusCodeReply(t *testing.T) {
	f := fakeFeishu(t)
	f.reply = func(n int) (int, string) {
		if n == 1 {
			return 200, `{"Extra":null,"StatusCode":19001,"StatusMessage":"param invalid"}`
		}
		return 200, `{"Extra":null,"StatusCode":0,"StatusMessage":"success"}`
	}
	obs := &recorder{}
	c, err := NewFeishu(FeishuConfig{Options: Options{Observer: obs, Backoff: time.Millisecond}, WebhookURL: f.srv.URL + "/hook", Secret: feishuSecret})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(context.Background(), alert("pay", 8, "boom")); err != nil {
		t.Fatal(err)
	}
	if obs.get("feishu", OutcomeRetried) != 1 || obs.get("feishu", OutcomeSent) != 1 {
		t.Errorf("retried %d sent %d, want 1 1", obs.get("feishu", OutcomeRetried), obs.get("feishu", OutcomeSent))
	}
}

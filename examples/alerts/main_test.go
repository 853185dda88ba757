package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFailuresReachDingTalk runs the example against a fake DingTalk robot
// on loopback that checks what DingTalk checks (the access token, a fresh
// timestamp, the signature, a text message): the directive's
// alert-channel=ops sends the second attempt's alert at once and the third
// one in the summary.
func TestFailuresReachDingTalk(t *testing.T) {
	const secret = "SECexample"
	var mu sync.Mutex
	var texts []string
	var problems []string
	robot := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		q := r.URL.Query()
		ts := q.Get("timestamp")
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(ts + "\n" + secret))
		ms, _ := strconv.ParseInt(ts, 10, 64)
		var msg struct {
			MsgType string `json:"msgtype"`
			Text    struct {
				Content string `json:"content"`
			} `json:"text"`
		}
		json.Unmarshal(body, &msg)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case q.Get("access_token") != "tok":
			problems = append(problems, "access_token")
			io.WriteString(w, `{"errcode":300001,"errmsg":"token is not exist"}`)
		case time.Since(time.UnixMilli(ms)).Abs() > time.Hour || q.Get("sign") != base64.StdEncoding.EncodeToString(mac.Sum(nil)):
			problems = append(problems, "signature")
			io.WriteString(w, `{"errcode":310000,"errmsg":"sign not match"}`)
		case msg.MsgType != "text" || msg.Text.Content == "":
			problems = append(problems, "message: "+string(body))
			io.WriteString(w, `{"errcode":40035,"errmsg":"bad message"}`)
		default:
			texts = append(texts, msg.Text.Content)
			io.WriteString(w, `{"errcode":0,"errmsg":"ok"}`)
		}
	}))
	defer robot.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, filepath.Join(t.TempDir(), "argo.db"), robot.URL+"/robot/send?access_token=tok", secret); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Fatalf("the robot refused requests: %q", problems)
	}
	if len(texts) != 2 {
		t.Fatalf("the robot got %d messages, want 2 (attempt 2 at once, attempt 3 in the summary): %q", len(texts), texts)
	}
	// The alert pool may run the two alerts' sends at once: either one can
	// open the window (attempt 2's, almost always).
	first, grouped := "2", "3"
	if strings.Contains(texts[0], "failed attempt 3 of 3") {
		first, grouped = "3", "2"
	}
	for _, want := range []string{"task github.com/argo-retry/argo/examples/alerts.ChargeCard", "failed attempt " + first + " of 3", "error: card gateway: 503 service unavailable", "rule: executeTimes >= 2"} {
		if !strings.Contains(texts[0], want) {
			t.Errorf("first message %q lacks %q", texts[0], want)
		}
	}
	for _, want := range []string{"1 more alert for task github.com/argo-retry/argo/examples/alerts.ChargeCard", "attempt " + grouped + ": card gateway: 503"} {
		if !strings.Contains(texts[1], want) {
			t.Errorf("summary %q lacks %q", texts[1], want)
		}
	}
}

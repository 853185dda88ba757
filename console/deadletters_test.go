package console_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/argo-retry/argo/console"
)

// TestDeadLettersBounded: the overview counts the dead tasks not requeued
// (a requeued one no longer awaits an operator), and stops at CountCap,
// showing "N+", so that the overview stays fast on a large table.
func TestDeadLettersBounded(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		h := e.handler(console.Options{AllowWrites: true})
		if r := post(t, h, taskPath(idDead)+"/requeue", "alice", url.Values{}); r.status != http.StatusSeeOther {
			t.Fatalf("requeue: %d\n%s", r.status, r.body)
		}
		if body := get(t, h, "/"); !strings.Contains(body, `id="dead-letters" href="./tasks?state=dead">31</a>`) {
			t.Error("the overview does not count 31 dead letters after one of the 32 dead tasks was requeued")
		}
		capped := e.handler(console.Options{CountCap: 5})
		if body := get(t, capped, "/"); !strings.Contains(body, `id="dead-letters" href="./tasks?state=dead">5+</a>`) {
			t.Error(`the overview with CountCap 5 does not show "5+" dead letters`)
		}
		var ov struct {
			N    int  `json:"dead_letters"`
			More bool `json:"dead_letters_more"`
		}
		if err := json.Unmarshal([]byte(get(t, capped, "/api/overview.json")), &ov); err != nil || ov.N != 5 || !ov.More {
			t.Errorf("overview.json with CountCap 5: dead letters %d, more %v (%v)", ov.N, ov.More, err)
		}
	})
}

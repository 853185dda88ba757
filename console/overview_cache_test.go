package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/console"
	"github.com/argo-retry/argo/runtime"
)

// One read of the overview serves the requests of OverviewMaxAge (a task
// written meanwhile shows after it), an action taken through the console
// forgets it (the page it redirects to shows the action), and a negative
// OverviewMaxAge reads it for every request.
func TestOverviewReadSharedUntilMaxAgeOrAction(t *testing.T) {
	e := newEnv(t, sqliteDSN(t))
	h := e.handler(console.Options{AllowWrites: true, OverviewMaxAge: time.Hour})
	uncached := e.handler(console.Options{OverviewMaxAge: -1})
	for _, handler := range []http.Handler{h, uncached} {
		if first := get(t, handler, "/api/overview.json"); strings.Contains(first, "cache.Fresh") {
			t.Fatal("the overview names a task not written yet")
		}
	}
	e.insert(seedRow{id: 9001, name: "cache.Fresh", state: runtime.StateDead, execTimes: 1, max: 1, params: `{}`, errMsg: "gone", modified: -time.Minute})
	if again := get(t, h, "/api/overview.json"); strings.Contains(again, "cache.Fresh") {
		t.Fatal("within OverviewMaxAge the overview was read again")
	}
	if fresh := get(t, uncached, "/api/overview.json"); !strings.Contains(fresh, "cache.Fresh") {
		t.Fatal("with a negative OverviewMaxAge the overview was not read for the request")
	}
	r := post(t, h, fmt.Sprintf("/tasks/%d/requeue", idDead), "alice", url.Values{})
	if r.status != http.StatusSeeOther {
		t.Fatalf("requeue: %d\n%s", r.status, r.body)
	}
	if after := get(t, h, "/api/overview.json"); !strings.Contains(after, "cache.Fresh") {
		t.Fatal("after an action the overview was served from before it")
	}
}

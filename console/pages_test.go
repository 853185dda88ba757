package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/argo-retry/argo/console"
	"github.com/argo-retry/argo/runtime"
)

// TestPagesRenderRealData: every page and both JSON documents show the
// seeded rows, with the ids the browser tests rely on.
func TestPagesRenderRealData(t *testing.T) {
	backends(t, func(t *testing.T, e *env) {
		h := e.handler(console.Options{AllowWrites: true, TraceURL: "https://traces.example/t/{traceId}"})

		body := get(t, h, "/")
		for _, want := range []string{`id="state-counts"`, `id="chart-outcomes"`, `id="chart-lateness"`, `id="instances"`, `id="unrunnable-names"`, `id="breakers"`,
			`<tr data-name="bulk.Sweep" data-tenant="`, `<td class="name">warehouse.LightOn</td>`, `<th data-state="dead">dead</th>`,
			`id="dead-letters" href="./tasks?state=dead">32</a>`, `src="./assets/console.js"`} {
			if !strings.Contains(body, want) {
				t.Errorf("overview lacks %q", want)
			}
		}

		body = get(t, h, "/tasks")
		for _, want := range []string{`id="task-filter"`, `id="task-table"`, `<span id="task-count">37</span>`, `id="bulk-requeue"`, `id="bulk-discard"`,
			`<a class="task-link" href="./tasks/1">1</a>`} {
			if !strings.Contains(body, want) {
				t.Errorf("task list lacks %q", want)
			}
		}
		for _, name := range []string{"state", "name", "tenant", "error", "key", "since", "until", "before"} {
			if !strings.Contains(body, `name="`+name+`"`) {
				t.Errorf("filter form lacks input %s", name)
			}
		}

		if body := get(t, h, "/tasks?limit=10"); !strings.Contains(body, `<a id="next-page" href="./tasks?before=`) {
			t.Error("a list of 37 tasks by 10 has no next page")
		}

		body = get(t, h, "/tasks/"+strconv.Itoa(idDead))
		for _, want := range []string{`<span id="task-state" class="state state-dead">dead</span>`, `id="task-args"`, `&#34;color&#34;: &#34;blue&#34;`,
			`id="task-policy"`, `&#34;max_attempts&#34;: 3`, `<li class="attempt outcome-failed">`, `backoff of <span class="backoff">2s</span>`,
			`id="task-lease">not leased`, `id="deps-up"`, `id="deps-down"`,
			`<a href="https://traces.example/t/4bf92f3577b34da6a3ce929d0e0e4736" rel="noreferrer noopener" target="_blank">4bf92f3577b34da6a3ce929d0e0e4736</a>`,
			`id="trail"`, `id="action-requeue"`, `id="action-discard-request"`, `name="reason"`, `<button type="submit">`} {
			if !strings.Contains(body, want) {
				t.Errorf("task page lacks %q", want)
			}
		}
		if n := strings.Count(body, `<li class="attempt `); n != 3 {
			t.Errorf("task page shows %d attempts, want 3", n)
		}
		body = get(t, h, "/tasks/"+strconv.Itoa(idRetrying))
		for _, want := range []string{`id="task-lease">retry held by instance host-a-1 until 2025-03-01 12:01:00.000Z`, `id="action-run"`, `id="action-force-fail"`, `id="action-discard-request"`} {
			if !strings.Contains(body, want) {
				t.Errorf("task page of a retrying task lacks %q", want)
			}
		}
		if strings.Contains(body, `id="action-requeue"`) {
			t.Error("a retrying task offers requeue")
		}
		if body := get(t, h, "/tasks/"+strconv.Itoa(idPending)); !strings.Contains(body, `id="action-force-fail"`) {
			t.Error("the task page of a pending task does not offer force-fail")
		}
		if body := get(t, h, "/tasks/"+strconv.Itoa(idRunning)); strings.Contains(body, `id="action-force-fail"`) {
			t.Error("the task page of a running task offers force-fail")
		}
		body = get(t, h, "/tasks/"+strconv.Itoa(idDiscarded))
		if !strings.Contains(body, "not JSON: shown as stored") || !strings.Contains(body, "not json {") {
			t.Error("task page of raw arguments does not show them as stored")
		}

		var ov struct {
			States []string `json:"states"`
			Counts []struct {
				Name       string `json:"name"`
				Tenant     string `json:"tenant"`
				Counts     []int  `json:"counts"`
				DeadGrowth int    `json:"dead_growth"`
			} `json:"counts"`
			DeadLetters int `json:"dead_letters"`
			Outcomes    struct {
				Time      []int64 `json:"time"`
				Succeeded []int   `json:"succeeded"`
				Failed    []int   `json:"failed"`
				Dead      []int   `json:"dead"`
			} `json:"outcomes"`
			Lateness struct {
				Time []int64   `json:"time"`
				P95  []float64 `json:"p95_ms"`
			} `json:"lateness"`
			Instances []struct {
				ID   string `json:"id"`
				Live bool   `json:"live"`
				Held int    `json:"held_retries"`
			} `json:"instances"`
			Unrunnable []string `json:"unrunnable_names"`
		}
		decode(t, get(t, h, "/api/overview.json"), &ov)
		rows := map[string]string{}
		for _, c := range ov.Counts {
			rows[c.Name+"/"+c.Tenant] = fmt.Sprint(c.Counts, " +", c.DeadGrowth)
		}
		if want := strings.Join(ov.States, ","); want != "pending,running,retrying,succeeded,dead,discarded" {
			t.Errorf("overview states %s", want)
		}
		for key, want := range map[string]string{
			"bulk.Sweep/acme":        "[0 0 0 0 30 0] +30",
			"labels.Print/globex":    "[0 0 0 0 1 0] +1", // dead 3 h ago, within the 6 h window
			"labels.Print/":          "[0 1 0 1 0 1] +0",
			"warehouse.LightOn/acme": "[0 0 1 0 1 0] +1",
			"warehouse.CallTruck/":   "[1 0 0 0 0 0] +0",
		} {
			if rows[key] != want {
				t.Errorf("overview counts of %s = %q, want %q", key, rows[key], want)
			}
		}
		sum := func(xs []int) (n int) {
			for _, x := range xs {
				n += x
			}
			return n
		}
		if ov.DeadLetters != 32 || len(ov.Outcomes.Time) == 0 || len(ov.Outcomes.Time) != len(ov.Lateness.Time) ||
			sum(ov.Outcomes.Succeeded) != 1 || sum(ov.Outcomes.Failed) != 4 || sum(ov.Outcomes.Dead) != 32 {
			t.Errorf("overview.json: dead letters %d, outcomes %+v", ov.DeadLetters, ov.Outcomes)
		}
		if len(ov.Instances) != 2 || ov.Instances[0].ID != "host-a-1" || !ov.Instances[0].Live || ov.Instances[0].Held != 1 || ov.Instances[1].Live {
			t.Errorf("overview instances: %+v", ov.Instances)
		}
		if strings.Join(ov.Unrunnable, ",") != "warehouse.CallTruck" {
			t.Errorf("unrunnable names: %q", ov.Unrunnable)
		}
		body = get(t, h, "/")
		for _, want := range []string{`<tr data-name="labels.Print" data-tenant="globex">`, `<td class="num dead-growth">+30</td>`,
			`<tr class="live"><td>host-a-1</td><td>yes</td>`, `<tr class="gone"><td>host-old</td><td>no</td>`,
			`<li><a href="./tasks?name=warehouse.CallTruck">warehouse.CallTruck</a></li>`} {
			if !strings.Contains(body, want) {
				t.Errorf("overview lacks %q", want)
			}
		}
		var tj struct {
			ID       int64  `json:"id"`
			State    string `json:"state"`
			Timeline []struct {
				Outcome string `json:"outcome"`
			} `json:"timeline"`
		}
		decode(t, get(t, h, "/api/tasks/1.json"), &tj)
		if tj.ID != idDead || tj.State != "dead" || len(tj.Timeline) != 3 {
			t.Errorf("tasks/1.json = %+v", tj)
		}
		if r := do(t, h, "GET", "/api/tasks/999.json", "alice", nil); r.status != http.StatusNotFound || !strings.Contains(r.body, "task 999 not found") {
			t.Errorf("tasks/999.json: %d %s", r.status, r.body)
		}
		if r := do(t, h, "GET", "/tasks/999", "alice", nil); r.status != http.StatusNotFound || !strings.Contains(r.body, "task 999 not found") {
			t.Errorf("tasks/999: %d", r.status)
		}
	})
}

func decode(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
}

func TestOverviewWindowText(t *testing.T) {
	e := newEnv(t, sqliteDSN(t))
	for window, want := range map[time.Duration]string{6 * time.Hour: "6h", 90 * time.Minute: "1h30m", 10 * time.Minute: "10m", 45 * time.Second: "45s"} {
		h := e.handler(console.Options{Window: window, Bucket: window / 10})
		if body := get(t, h, "/"); !strings.Contains(body, `last <span class="window">`+want+`</span>`) {
			t.Errorf("window %s is not shown as %s", window, want)
		}
	}
}

// TestOverviewColumnsStay: the main states have a column even with no
// task in them; the others appear when a task is.
func TestOverviewColumnsStay(t *testing.T) {
	db, dialect, err := runtime.OpenDB(sqliteDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := runtime.Migrate(context.Background(), db, dialect); err != nil {
		t.Fatal(err)
	}
	h, err := console.New(console.Options{Inspector: runtime.NewInspector(db, dialect)})
	if err != nil {
		t.Fatal(err)
	}
	body := get(t, h, "/")
	for _, s := range []string{"pending", "running", "retrying", "succeeded", "dead", "discarded"} {
		if !strings.Contains(body, `<th data-state="`+s+`">`) {
			t.Errorf("an empty overview has no %s column", s)
		}
	}
	if strings.Contains(body, `<th data-state="blocked">`) {
		t.Error("an empty overview has a blocked column")
	}
}

package runtime

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// recordingChannel is an AlertChannel that keeps what it is sent.
type recordingChannel struct {
	mu     sync.Mutex
	events []AlertEvent
}

func (c *recordingChannel) Send(ctx context.Context, ev AlertEvent) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, ev)
	return nil
}

func (c *recordingChannel) attempts() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for _, ev := range c.events {
		out = append(out, ev.ExecuteTimes)
	}
	return out
}

// The channels a task names get each of its alerts, next to its action,
// on the alert pool; a channel it does not name gets none.
func TestAlertChannelsGetAlerts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		ops, mail, other := &recordingChannel{}, &recordingChannel{}, &recordingChannel{}
		cfg := testConfigT(t, dsn)
		cfg.AlertChannels = map[string]AlertChannel{"ops": ops, "mail": mail, "other": other}
		rt := startRuntime(t, cfg)
		var actionMu sync.Mutex
		var actions []int
		def := &TaskDef{Name: "channelled", Policy: fastPolicy(3), Alert: "executeTimes >= 2", AlertChannels: []string{"ops", "mail"},
			Run: func(ctx context.Context, args []byte) error { return errors.New("gateway down") },
			AlertAction: func(ctx context.Context, ev AlertEvent) error {
				actionMu.Lock()
				actions = append(actions, ev.ExecuteTimes)
				actionMu.Unlock()
				return nil
			}, AlertActionName: "page"}
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		id, err := rt.Submit(context.Background(), Call{Task: def, Args: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, rt, id, StateDead, 10*time.Second)
		for name, ch := range map[string]*recordingChannel{"ops": ops, "mail": mail} {
			waitFor(t, 5*time.Second, name+" gets the alerts of attempts 2 and 3", func() bool { return len(ch.attempts()) == 2 })
			ch.mu.Lock()
			for _, ev := range ch.events {
				if ev.TaskName != "channelled" || ev.TaskID != id || ev.LastError != "gateway down" || ev.Expression != "executeTimes >= 2" {
					t.Errorf("%s got %+v", name, ev)
				}
			}
			ch.mu.Unlock()
		}
		waitFor(t, 5*time.Second, "the action runs twice too", func() bool {
			actionMu.Lock()
			defer actionMu.Unlock()
			return len(actions) == 2
		})
		if got := other.attempts(); len(got) != 0 {
			t.Errorf("a channel the task does not name got %v", got)
		}
	})
}

// Register refuses a task naming a channel that is not configured, and
// lists those that are.
func TestRegisterRefusesUnknownAlertChannel(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "argo.db")
	run := func(ctx context.Context, args []byte) error { return nil }
	for _, c := range []struct {
		channels map[string]AlertChannel
		want     string
	}{
		{map[string]AlertChannel{"ops": &recordingChannel{}, "mail": &recordingChannel{}}, `argo: task charge: alert channel "pager" is not in runtime.Config.AlertChannels (configured: mail, ops)`},
		{nil, `argo: task charge: alert channels "ops", "pager" are not in runtime.Config.AlertChannels (none is configured)`},
	} {
		cfg := testConfigT(t, dsn)
		cfg.AlertChannels = c.channels
		rt := startRuntime(t, cfg)
		err := rt.Register(&TaskDef{Name: "charge", Alert: "exhausted", AlertChannels: []string{"ops", "pager"}, Run: run})
		if err == nil || err.Error() != c.want {
			t.Errorf("Register = %v, want %s", err, c.want)
		}
		if rt.handler("charge") != nil {
			t.Error("the task was registered anyway")
		}
		rt.Stop(context.Background())
	}
}

func TestStartRefusesBadAlertChannels(t *testing.T) {
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "argo.db")
	for _, c := range []struct {
		channels map[string]AlertChannel
		want     string
	}{
		{map[string]AlertChannel{"ops": nil}, `Config.AlertChannels["ops"] is nil`},
		{map[string]AlertChannel{" ": &recordingChannel{}}, "empty name"},
	} {
		cfg := testConfigT(t, dsn)
		cfg.AlertChannels = c.channels
		rt, err := Start(context.Background(), cfg)
		if err == nil {
			rt.Stop(context.Background())
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Start = %v, want an error with %q", err, c.want)
		}
	}
}

func TestAlertChannelsNeedAlert(t *testing.T) {
	d := &TaskDef{Name: "charge", AlertChannels: []string{"ops"}}
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "AlertChannels need an Alert expression") {
		t.Errorf("Validate = %v", err)
	}
}

package console_test

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/argo-retry/argo/runtime"
)

// cancelRunning: alice cancels a task whose attempt is running on the
// fixture's runtime from its page; the task ends discarded at once, the
// runtime cancels the attempt's context (cause ErrCancelled) at its next
// heartbeat, and the page shows the attempt cancelled and the trail.
// Run last: it adds a task the other steps' counts do not expect.
func (e *e2e) cancelRunning() {
	t := e.t
	t.Log("cancel a running attempt")
	started := make(chan struct{}, 1)
	cause := make(chan error, 1)
	def := &runtime.TaskDef{Name: "reports.Rebuild", Policy: fixed(3), Run: func(ctx context.Context, _ []byte) error {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			cause <- context.Cause(ctx)
		case <-time.After(2 * time.Minute):
			cause <- errors.New("never canceled")
		}
		return ctx.Err()
	}}
	if err := e.rt.Register(def); err != nil {
		t.Fatal(err)
	}
	id, err := e.rt.Submit(context.Background(), runtime.Call{Task: def, Tenant: "acme", Args: []byte(`{"report":"revenue","year":2025}`)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the attempt did not start")
	}
	alice := e.as("alice")
	alice.Navigate(e.taskURL(id))
	if got := alice.Text("#action-cancel [type=submit]"); !strings.Contains(got, "stop the running attempt") {
		t.Fatalf("the running task's cancel button says %q", got)
	}
	alice.SetValue(`#action-cancel textarea[name=reason]`, "report superseded by the new pricing")
	alice.ClickAndWaitLoad(`#action-cancel [type=submit]`)
	if s := e.state(id); s != runtime.StateDiscarded {
		t.Fatalf("after the cancel the task is %s; want discarded", s)
	}
	if got := alice.Text("#flash"); !strings.Contains(got, "Cancelled") {
		t.Errorf("#flash = %q; want the cancel's", got)
	}
	if got := alice.Text("#attempts"); !strings.Contains(got, runtime.OutcomeCancelled) {
		t.Errorf("#attempts = %q; want the attempt cancelled", got)
	}
	if got := alice.Text("#trail"); !strings.Contains(got, "cancel") || !strings.Contains(got, "alice") {
		t.Errorf("#trail = %q; want alice's cancel", got)
	}
	e.screenshot(alice, "console-task-cancelled.png")
	// The default lease is 30 s: the renewal comes within 10 s.
	select {
	case err := <-cause:
		if !errors.Is(err, runtime.ErrCancelled) {
			t.Fatalf("the attempt's context ended with %v; want ErrCancelled", err)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the attempt's context was not cancelled within 25 s of the cancel")
	}
}

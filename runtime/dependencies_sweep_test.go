package runtime

import (
	"context"
	"testing"
	"time"
)

// A dependent task whose release was lost (its upstream task succeeded, its
// edge left unsettled and it left blocked: what a submit on one Galera node
// racing its upstream task's finish on another leaves) is released by the
// runtime's blocked sweeper and runs, within the bound docs/dependencies.md
// states: LeaseDuration + 3×RescueInterval.
func TestLostReleaseRunByTheBlockedSweeper(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		cfg := testConfig(dsn)
		rt := startRuntime(t, cfg)
		ran := make(chan struct{}, 1)
		up := &TaskDef{Name: "sweep.up", Policy: fastPolicy(1), Run: func(context.Context, []byte) error { return nil }}
		down := &TaskDef{Name: "sweep.down", Policy: fastPolicy(1), Run: func(context.Context, []byte) error {
			ran <- struct{}{}
			return nil
		}}
		if err := rt.Register(down); err != nil { // up has no handler here: it is never claimed
			t.Fatal(err)
		}
		ids, err := rt.SubmitGroup(ctx, []GroupCall{
			{Call: Call{Task: up, Args: []byte(`{}`)}},
			{Call: Call{Task: down, Args: []byte(`{}`)}, AfterCalls: []int{0}},
		})
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, rt, ids[1], StateBlocked, 5*time.Second)
		// The upstream task's finish, its dependency steps lost.
		if _, err := rt.DB().ExecContext(ctx, "UPDATE argo_task SET task_status = ? WHERE id = ?", int(StateSucceeded), ids[0]); err != nil {
			t.Fatal(err)
		}
		lost := time.Now()
		bound := cfg.LeaseDuration + 3*(cfg.LeaseDuration/3) // the defaults: RescueInterval = LeaseDuration/3
		select {
		case <-ran:
		case <-time.After(bound + 10*time.Second):
			t.Fatalf("the downstream task did not run within %s of its lost release", bound+10*time.Second)
		}
		if took := time.Since(lost); took > bound+2*time.Second {
			t.Fatalf("the downstream task ran %s after its lost release, want within %s (+2s for the claim and the test)", took, bound)
		}
		waitState(t, rt, ids[1], StateSucceeded, 5*time.Second)
	})
}

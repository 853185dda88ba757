package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// SubmitGroup whose COMMIT committed but whose answer was lost (MariaDB,
// the proxy cutting the connection after the server answered the group's
// COMMIT) answers nil with the group's ids, as when the answer comes;
// with the database unreachable after the cut it answers ErrOutcomeUnknown,
// never ErrNotPersisted for a group that may be written. Before the fix it
// answered ErrNotPersisted ("invalid connection") with all four rows
// written (the fault checker, seed 45 with deps, invariant answer).
func TestSubmitGroupWhoseCommitAnswerIsLost(t *testing.T) {
	for _, unreachable := range []bool{false, true} {
		name := "written"
		if unreachable {
			name = "unreachable"
		}
		t.Run(name, func(t *testing.T) {
			// No task is registered: the runtime claims nothing, so the
			// group's COMMIT is the one sent right after the hook arms the cut.
			rt, proxy := proxiedRuntime(t, nil)
			def := &TaskDef{Name: "group.lost", Policy: fastPolicy(1), Run: func(context.Context, []byte) error { return nil }}
			// The caller's deadline bounds the resolution (to at least
			// storage.SubmitResolveFloor): without one it would wait for the
			// database for ever.
			deadline := 30 * time.Second
			if unreachable {
				deadline = 100 * time.Millisecond
			}
			cctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			ctx := storage.WithTxHook(cctx, func(_ context.Context, _ int, at storage.TxPoint) error {
				if at == storage.TryCommit {
					proxy.CutAnswer(bareCommit, 1)
					if unreachable {
						proxy.RefuseAfterCut()
					}
				}
				return nil
			})
			calls := []GroupCall{{Call: Call{Task: def, Args: []byte(`{"i":0}`)}},
				{Call: Call{Task: def, Args: []byte(`{"i":1}`)}, AfterCalls: []int{0}},
				{Call: Call{Task: def, Args: []byte(`{"i":2}`)}, AfterCalls: []int{0}},
				{Call: Call{Task: def, Args: []byte(`{"i":3}`)}, AfterCalls: []int{1, 2}}}
			ids, err := rt.SubmitGroup(ctx, calls)
			if proxy.Cuts() != 1 {
				t.Fatalf("the proxy lost %d answers, want 1 (the group's COMMIT)", proxy.Cuts())
			}
			if unreachable {
				if !errors.Is(err, ErrOutcomeUnknown) || errors.Is(err, ErrNotPersisted) {
					t.Fatalf("group whose COMMIT's answer was lost, the database unreachable: %v, want ErrOutcomeUnknown", err)
				}
				return
			}
			if err != nil || len(ids) != 4 {
				t.Fatalf("group whose COMMIT's answer was lost: %v, %v; want nil and four ids", ids, err)
			}
			for _, id := range ids {
				if _, err := rt.store.Get(context.Background(), id); err != nil {
					t.Fatalf("task %d of the group: %v", id, err)
				}
			}
		})
	}
}

package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/argo-retry/argo/internal/testdb"
)

// TestOrderKeyRefusedUnderFlowControlOnEveryPath: an order key on a task
// under flow control (its gated claim does not apply the order gate: two
// calls of one key ran at once under limit=10) is refused with the same
// error, wrapping ErrNotPersisted, on every submit path — Submit, Submit
// with After, SubmitTx, SubmitGroup and the GeneratedCall generated code submits —
// for a registered handler and for a TaskDef this instance does not run;
// and nothing is written.
func TestOrderKeyRefusedUnderFlowControlOnEveryPath(t *testing.T) {
	ctx := context.Background()
	rt := startRuntime(t, testConfig(testdb.SQLiteDSN(t)))
	noop := func(context.Context, []byte) error { return nil }
	registered := &TaskDef{Name: "order.flow.registered", Policy: fastPolicy(1), Run: noop, Flow: &FlowControl{Group: "cap10", Limit: 10}}
	if err := rt.Register(registered); err != nil {
		t.Fatal(err)
	}
	remote := &TaskDef{Name: "order.flow.remote", Policy: fastPolicy(1), Flow: &FlowControl{Rate: 5}}
	plain := &TaskDef{Name: "order.flow.upstream", Policy: fastPolicy(1), Mode: Scheduled, Delay: 3600e9}
	up, err := rt.Submit(ctx, Call{Task: plain, Args: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range []*TaskDef{registered, remote} {
		paths := []struct {
			name   string
			submit func() error
		}{
			{"Submit", func() error {
				_, err := rt.Submit(ctx, Call{Task: def, Args: []byte(`{}`), OrderKey: "k"})
				return err
			}},
			{"Submit with After", func() error {
				_, err := rt.Submit(ctx, Call{Task: def, Args: []byte(`{}`), OrderKey: "k", After: []int64{up}})
				return err
			}},
			{"SubmitTx", func() error {
				tx, err := rt.DB().BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				_, err = rt.SubmitTx(ctx, tx, Call{Task: def, Args: []byte(`{}`), OrderKey: "k"})
				return err
			}},
			{"SubmitGroup", func() error {
				_, err := rt.SubmitGroup(ctx, []GroupCall{{Call: Call{Task: plain, Args: []byte(`{}`)}}, {Call: Call{Task: def, Args: []byte(`{}`), OrderKey: "k"}, AfterCalls: []int{0}}})
				return err
			}},
			{"SubmitGroup without edges", func() error {
				_, err := rt.SubmitGroup(ctx, []GroupCall{{Call: Call{Task: def, Args: []byte(`{}`), OrderKey: "k"}}})
				return err
			}},
			{"generated call", func() error {
				_, err := GeneratedCall{Runtime: rt, Register: "Register", Task: def, Args: struct{}{}, OrderKey: "k"}.Submit(ctx)
				return err
			}},
			{"generated call in a transaction", func() error {
				tx, err := rt.DB().BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				call := GeneratedCall{Runtime: rt, Register: "Register", Task: def, Args: struct{}{}, OrderKey: "k", Tx: tx}
				_, err = call.Submit(ctx)
				return err
			}},
			{"generated call with after", func() error {
				call := GeneratedCall{Runtime: rt, Register: "Register", Task: def, Args: struct{}{}, OrderKey: "k", After: []int64{up}}
				_, err := call.Submit(ctx)
				return err
			}},
		}
		for _, p := range paths {
			t.Run(fmt.Sprintf("%s/%s", def.Name, p.name), func(t *testing.T) {
				err := p.submit()
				if err == nil {
					t.Fatal("a keyed call of a flow-controlled task was accepted")
				}
				if !errors.Is(err, ErrNotPersisted) || !strings.Contains(err.Error(), errOrderedFlow.Error()) {
					t.Fatalf("error %q: want one wrapping ErrNotPersisted that says %q", err, errOrderedFlow)
				}
			})
		}
	}
	var n int
	if err := rt.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM argo_task WHERE task_id <> ?", plain.Name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d rows written by refused submits", n)
	}
}

package runtime

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Slot grants (storage/flow_grants.go) under load: four instances with 4
// workers each run a group capped at 10, just above one instance's workers,
// so that one or two instances at a time hold a grant and claim without the
// group's lock while the others take the locked, counted claim. The calls
// running at once never exceed the cap, grants were held (read from the
// group's row while the tasks ran), every task succeeds, and no (task,
// attempt) runs twice. On SQLite, whose one writer claims for the four
// instances in turn, 150 tasks do (each statement is parsed again per
// call, which under -race made 400 take 24 s on an idle machine and more
// than the 90 s wait in a loaded make test).
func TestFlowCapWithSlotGrants(t *testing.T) {
	forEachFlowBackend(t, func(t *testing.T, dsn string) {
		const capN, workers = 10, 4
		tasks := 400
		if strings.HasPrefix(dsn, "sqlite:") {
			tasks = 150
		}
		var peak peakTracker
		var runs sync.Map // "id/attempt" → *atomic.Int32
		def := &TaskDef{Name: "flow.grant", Policy: fastPolicy(3), Flow: &FlowControl{Group: "granted", Limit: capN},
			Run: func(ctx context.Context, _ []byte) error {
				peak.enter()
				defer peak.leave()
				id, attempt, _ := AttemptFrom(ctx)
				n, _ := runs.LoadOrStore(fmt.Sprintf("%d/%d", id, attempt), new(atomic.Int32))
				n.(*atomic.Int32).Add(1)
				time.Sleep(10 * time.Millisecond) // the call's duration
				return nil
			}}
		rts := make([]*Runtime, 4)
		for i := range rts {
			cfg := testConfig(instanceDSN(dsn, i))
			cfg.InstanceID = fmt.Sprintf("grant-%d", i)
			cfg.Workers = workers
			cfg.PollInterval = 50 * time.Millisecond
			cfg.LeaseDuration = 20 * time.Second
			rts[i] = startRuntime(t, cfg)
			if err := rts[i].Register(def); err != nil {
				t.Fatal(err)
			}
		}
		// Watch the group's grants (as argoctl flow shows them) while the
		// tasks run.
		_, insp := openDB(t, dsn)
		var mostHolders atomic.Int32
		stop := make(chan struct{})
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			for {
				groups, _ := insp.FlowGroups(context.Background())
				for _, g := range groups {
					if holders := int32(len(g.Grants)); g.Group == "granted" && holders > mostHolders.Load() {
						mostHolders.Store(holders)
					}
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		}()
		ids := submitN(t, rts, def, tasks)
		waitAllSucceeded(t, rts[0], def.Name, ids, 90*time.Second)
		close(stop)
		<-watched
		t.Logf("observed at most %d calls at once, cap %d; at most %d instances held a grant at once", peak.peak.Load(), capN, mostHolders.Load())
		if got := peak.peak.Load(); got > capN {
			t.Fatalf("%d calls ran at once across the instances, cap %d", got, capN)
		}
		if mostHolders.Load() == 0 {
			t.Fatal("no instance ever held a slot grant: the lock-free claim was not exercised")
		}
		runs.Range(func(k, v any) bool {
			if n := v.(*atomic.Int32).Load(); n != 1 {
				t.Errorf("task/attempt %s ran %d times", k, n)
			}
			return true
		})
	})
}

// A gated claim that fails ends this instance's grant at once: its commit
// may have dropped the grant in the group's row (an outcome unknown to the
// caller), after which the other instances no longer count it, so claiming
// on under it would overrun the cap.
func TestFlowGrantEndsWhenItsClaimFails(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		def := &TaskDef{Name: "flow.renew", Policy: fastPolicy(3), Flow: &FlowControl{Group: "renewed", Limit: 100},
			Run: func(context.Context, []byte) error { return nil }}
		rt := startRuntime(t, testConfig(dsn))
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		_, groups := rt.splitFlow([]string{def.Name})
		if len(groups) != 1 || !groups[0].policy.Grantable() {
			t.Fatalf("groups %+v: want one group that takes grants", groups)
		}
		db, _ := openDB(t, dsn)
		if _, err := db.Exec("ALTER TABLE argo_flow RENAME TO argo_flow_gone"); err != nil {
			t.Fatal(err)
		}
		rt.flow.setGrant("renewed", toMillis(rt.now().Add(time.Hour)))
		rt.flow.setBusy("renewed", true) // straight to the transaction
		if _, err := rt.claimFlow(groups, 4, rt.now()); err == nil {
			t.Fatal("the gated claim succeeded without its table")
		}
		if until := rt.flow.grant("renewed"); until != 0 {
			t.Fatalf("after a failed claim this instance still holds its grant until %s", until.Time())
		}
	})
}

// Stop gives this instance's slot grants back once it claims no more, so
// that the other instances need not wait for them to run out.
func TestStopGivesSlotGrantsBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		release := make(chan struct{})
		def := &TaskDef{Name: "flow.stopping", Policy: fastPolicy(3), Flow: &FlowControl{Group: "stopping", Limit: 100},
			Run: func(ctx context.Context, _ []byte) error {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil
			}}
		cfg := testConfig(dsn)
		cfg.InstanceID = "stopping-1"
		rt := startRuntime(t, cfg)
		if err := rt.Register(def); err != nil {
			t.Fatal(err)
		}
		_, insp := openDB(t, dsn)
		grantOf := func() (FlowSlotGrant, bool) {
			groups, err := insp.FlowGroups(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range groups {
				for _, gr := range g.Grants {
					if g.Group == "stopping" && gr.Instance == cfg.InstanceID {
						return gr, true
					}
				}
			}
			return FlowSlotGrant{}, false
		}
		submitN(t, []*Runtime{rt}, def, 2)
		waitFor(t, 10*time.Second, "a slot grant of the group", func() bool { _, ok := grantOf(); return ok })
		close(release)
		if err := rt.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if gr, ok := grantOf(); ok {
			t.Fatalf("after Stop the instance still holds %d slots until %s", gr.Slots, gr.Until)
		}
	})
}

package main

import (
	"bytes"
	"context"
	"database/sql/driver"
	"encoding/json"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/argo-retry/argo/internal/testdb"
	"github.com/argo-retry/argo/runtime"
)

// TestClaimWorkloadTimesArgosClaim runs the claim workload at a tiny scale
// on SQLite and MariaDB and checks that the argo side timed the statements
// a running argo sent (its due-index read, not a copy of an older claim),
// that both sides have figures, and that the plans were recorded.
func TestClaimWorkloadTimesArgosClaim(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the claim workload (a few seconds)")
	}
	for _, be := range testdb.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			var out, log bytes.Buffer
			code := run([]string{"-dsn", be.DSN, "-scale", "0.001", "-runs", "1", "-claims", "3", "-claimbatch", "20", "-only", "claim", "-o", "json"}, &out, &log)
			if code != 0 {
				t.Fatalf("argobench exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), log.String())
			}
			var rep Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("output is not a JSON report: %v\n%s", err, out.String())
			}
			if len(rep.Errors) > 0 {
				t.Fatalf("errors: %v", rep.Errors)
			}
			rows := 0
			for _, r := range rep.Rows {
				if !strings.HasPrefix(r.Workload, "5 ") {
					continue
				}
				rows++
				if r.Argo == nil || r.Hand == nil || r.Argo.Median <= 0 || r.Hand.Median <= 0 {
					t.Errorf("%s: argo %+v, hand %+v: want both measured", r.Metric, r.Argo, r.Hand)
				}
			}
			if rows == 0 {
				t.Fatalf("no claim rows in the report")
			}
			// The argo plans are of argo's own claim: on the due index.
			wantIndex := map[string]string{"sqlite": "INDEXED BY idx_claim_due", "mysql": "ORDER BY due_at"}[be.Name]
			argoPlans := 0
			for _, p := range rep.Plans {
				if p.Side != "argo" {
					continue
				}
				argoPlans++
				if !strings.Contains(p.Query, wantIndex) || strings.Contains(p.Query, "SKIP LOCKED") {
					t.Errorf("argo plan of %q: want argo's claim (%q, no SKIP LOCKED)", p.Query, wantIndex)
				}
			}
			if argoPlans == 0 {
				t.Errorf("no plan of argo's claim recorded")
			}
			captured := false
			for _, n := range rep.Notes {
				captured = captured || strings.Contains(n, "statements a running argo sent")
			}
			if !captured {
				t.Errorf("notes %q: want the note that the claim was captured", rep.Notes)
			}
		})
	}
}

// TestCaptureClaimFailsWhenNotSeen: when argo sends no statement with a
// claim marker (its SQL changed), the capture is an error, not a fallback
// to a copy of an older claim.
func TestCaptureClaimFailsWhenNotSeen(t *testing.T) {
	for _, be := range testdb.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			ctx := context.Background()
			b := newTestBencher(t, be.DSN)
			markers := claimMarkers(b.dialect)
			markers[len(markers)-1] = "a statement argo does not send"
			claim, err := b.captureClaim(ctx, markers)
			if err == nil {
				claim.close()
				t.Fatal("capture with a marker argo does not send: no error")
			}
			if !strings.Contains(err.Error(), "a statement argo does not send") {
				t.Errorf("error %q: want it to name the missing statement", err)
			}
			// With argo's real markers the capture succeeds.
			if err := b.reset(ctx); err != nil {
				t.Fatal(err)
			}
			claim, err = b.captureClaim(ctx, claimMarkers(b.dialect))
			if err != nil {
				t.Fatalf("capture of argo's claim: %v", err)
			}
			claim.close()
		})
	}
}

// newTestBencher sets up a bencher on dsn as bench does.
func newTestBencher(t *testing.T, dsn string) *bencher {
	t.Helper()
	ctx := context.Background()
	admin, dialect, err := runtime.OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	if _, err := runtime.Migrate(ctx, admin, dialect); err != nil {
		t.Fatal(err)
	}
	hand, _, err := runtime.OpenDB(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hand.Close() })
	o := &options{runs: 1, scale: 0.001, workers: 4, submitters: 2, handBatch: 10, claims: 3, claimBatch: 20}
	return &bencher{o: o, dsn: dsn, dialect: dialect, admin: admin, hand: hand, log: io.Discard, logger: slog.New(slog.DiscardHandler), rep: &Report{}}
}

// TestHandClaimTakesEachRowOnce: hand-written claimers racing on MariaDB
// (plain reads of the same due rows, then fenced UPDATEs) take every row
// exactly once between them.
func TestHandClaimTakesEachRowOnce(t *testing.T) {
	ctx := context.Background()
	b := newTestBencher(t, testdb.MySQLDSN(t))
	const rows, claimers = 400, 8
	seedDue(t, b, rows)
	var mu sync.Mutex
	taken := map[int64]int{}
	var wg sync.WaitGroup
	errc := make(chan error, claimers)
	for range claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for empty := 0; empty < 3; {
				got, err := b.handClaim(ctx, b.hand, 10)
				if err != nil {
					errc <- err
					return
				}
				if len(got) == 0 {
					empty++
					continue
				}
				mu.Lock()
				for _, c := range got {
					taken[c.id]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	for id, n := range taken {
		if n != 1 {
			t.Errorf("row %d taken %d times", id, n)
		}
	}
	if len(taken) != rows {
		t.Errorf("%d rows taken, want %d", len(taken), rows)
	}
	left, err := countWhere(ctx, b.admin, "task_status = 0")
	if err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d rows left pending", left)
	}
}

// TestArgoClaimTakeRefusesChangedCandidate: the bench's replay of argo's
// take changes a row only if it is still as read, and a claim that could
// not take every candidate (with no other claimer) is an error that leaves
// every row as it was, on the multi-statement path and the per-row one.
func TestArgoClaimTakeRefusesChangedCandidate(t *testing.T) {
	ctx := context.Background()
	b := newTestBencher(t, testdb.MySQLDSN(t))
	claim, err := b.captureClaim(ctx, claimMarkers(b.dialect))
	if err != nil {
		t.Fatal(err)
	}
	defer claim.close()
	if claim.multi == nil {
		t.Fatal("no multi-statement pool: the test server should interpolate arguments, as argo's pool needs")
	}
	if err := b.reset(ctx); err != nil {
		t.Fatal(err)
	}
	seedDue(t, b, 3)
	rows, err := b.hand.QueryContext(ctx, claim.read.Query, claim.readArgs(time.Now().UnixMilli(), 10)...)
	if err != nil {
		t.Fatal(err)
	}
	cands, err := scanCandidates(rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(cands) != 3 {
		t.Fatalf("read %d candidates, want 3", len(cands))
	}
	cands[1].attempts++ // as if another claimer had run it since the read
	takes := map[string]func() (int, error){
		"multi":   func() (int, error) { return claim.takeMulti(ctx, cands, time.Now().UnixMilli()) },
		"rowwise": func() (int, error) { return claim.takeRowwise(ctx, b.hand, cands, time.Now().UnixMilli()) },
	}
	for name, take := range takes {
		if n, err := take(); err == nil {
			t.Errorf("%s: took %d of 3 candidates, one changed since read: no error", name, n)
		}
		pending, err := countWhere(ctx, b.admin, "task_status = 0 AND lease_owner = ''")
		if err != nil {
			t.Fatal(err)
		}
		if pending != 3 {
			t.Errorf("%s: %d rows left pending and unleased, want all 3 (the failed claim rolled back)", name, pending)
		}
	}
	cands[1].attempts--
	if n, err := claim.takeMulti(ctx, cands, time.Now().UnixMilli()); err != nil || n != 3 {
		t.Errorf("take of unchanged candidates: %d, %v; want 3", n, err)
	}
}

// TestArgoClaimMovesTimes: a captured claim's time arguments are moved to
// the moment of the replay; other arguments are kept.
func TestArgoClaimMovesTimes(t *testing.T) {
	at := time.Now().Add(-time.Hour).UnixMilli()
	c := &argoClaim{at: at}
	now := time.Now().UnixMilli()
	got := c.moved([]driver.Value{at, at + 30_000, "argobench.Work", int64(7), int64(63)}, now)
	want := []any{now, now + 30_000, "argobench.Work", int64(7), int64(63)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("moved = %v, want %v", got, want)
	}
}

// seedDue inserts n pending Work rows due a minute ago.
func seedDue(t *testing.T, b *bencher, n int) {
	t.Helper()
	now := time.Now().UnixMilli()
	if err := b.bulkLoad(context.Background(), n, func(int) (int, int64) { return statePending, now - 60_000 }); err != nil {
		t.Fatal(err)
	}
}

package storagetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/argo-retry/argo/internal/storage"
)

// instanceCases: the instances' rows (heartbeats, the names they run),
// leader election, tasks no live instance can run, the database clock.
func instanceCases() []testCase {
	return []testCase{
		{"Heartbeat", instancesHeartbeat},
		{"HeartbeatRace", instancesHeartbeatRace},
		{"LeaderElection", instancesLeader},
		{"LeaderRace", instancesLeaderRace},
		{"FlagOrphans", instancesFlagOrphans},
		{"DatabaseTime", instancesDatabaseTime},
	}
}

// A heartbeat inserts the instance's row, then updates it (time and
// names); LiveInstances lists those that beat at the cutoff or later, by
// id; KnownTaskNames is the union of their names; a removed instance is
// gone at once.
func instancesHeartbeat(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	beat := func(id string, names []string, at Millis) {
		t.Helper()
		if err := s.RecordHeartbeat(ctx, id, names, at); err != nil {
			t.Fatalf("heartbeat of %s: %v", id, err)
		}
	}
	beat("b", []string{"x", "y"}, 100)
	beat("a", []string{"y", "z"}, 100)
	beat("old", []string{"gone"}, 50)
	beat("b", []string{"x", "w"}, 200) // an update: names replaced
	live, err := s.LiveInstances(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 2 || live[0].ID != "a" || live[1].ID != "b" || !slices.Equal(live[1].Names, []string{"x", "w"}) {
		t.Fatalf("LiveInstances(100) = %+v, want a and b (b with names x, w)", live)
	}
	names, ids, err := s.KnownTaskNames(ctx, 100)
	if err != nil || !slices.Equal(names, []string{"w", "x", "y", "z"}) || !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("KnownTaskNames(100) = %v, %v, %v; want [w x y z] of [a b]", names, ids, err)
	}
	if live, err := s.LiveInstances(ctx, 150); err != nil || len(live) != 1 || live[0].ID != "b" {
		t.Fatalf("LiveInstances(150) = %+v, %v; want b (its update moved its heartbeat)", live, err)
	}
	if err := s.RemoveInstance(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if live, err := s.LiveInstances(ctx, 0); err != nil || len(live) != 2 || live[0].ID != "a" || live[1].ID != "old" {
		t.Fatalf("after removing b: %+v, %v; want a and old", live, err)
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_instance"); n != 2 {
		t.Fatalf("%d instance rows, want 2", n)
	}
}

// The first heartbeats of one instance racing (its row missing) all
// succeed, and leave one row.
func instancesHeartbeatRace(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.RecordHeartbeat(ctx, "twin", []string{"n"}, Millis(100+i))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a racing first heartbeat: %v", err)
		}
	}
	if n := count(t, s, "SELECT COUNT(*) FROM argo_instance WHERE instance_id = 'twin'"); n != 1 {
		t.Fatalf("%d rows for one instance, want 1", n)
	}
}

// A role is held by one instance until it expires or is released: others
// are refused meanwhile; the holder renews it; after expiry another takes
// it; a release by one that does not hold it changes nothing; a release by
// the holder lets the next one take it at once.
func instancesLeader(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	lead := func(holder string, now, until Millis, want bool) {
		t.Helper()
		got, err := s.TryLead(ctx, "maintenance", holder, now, until)
		if err != nil || got != want {
			t.Fatalf("TryLead(%s at %d) = %v, %v; want %v", holder, now, got, err, want)
		}
	}
	lead("a", 100, 200, true)  // free: a takes it
	lead("b", 150, 250, false) // a holds it until 200
	lead("a", 190, 300, true)  // a renews
	lead("b", 250, 350, false) // still a's until 300
	lead("b", 301, 400, true)  // expired: b takes it
	lead("a", 302, 400, false)
	if err := s.ReleaseLeader(ctx, "maintenance", "a"); err != nil { // a does not hold it
		t.Fatal(err)
	}
	lead("a", 303, 400, false)
	if err := s.ReleaseLeader(ctx, "maintenance", "b"); err != nil {
		t.Fatal(err)
	}
	lead("a", 304, 400, true) // released: a takes it before b's term would end
	if ok, err := s.TryLead(ctx, "other-role", "b", 305, 400); err != nil || !ok {
		t.Fatalf("another role: %v, %v; want b to hold it", ok, err)
	}
}

// Instances racing for a free role: exactly one holds it.
func instancesLeaderRace(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	const racers = 8
	won := make([]bool, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won[i], errs[i] = s.TryLead(ctx, "race", fmt.Sprintf("i%d", i), 100, 1000)
		}()
	}
	wg.Wait()
	var leaders []string
	for i := range racers {
		if errs[i] != nil {
			t.Fatalf("racer %d: %v", i, errs[i])
		}
		if won[i] {
			leaders = append(leaders, fmt.Sprintf("i%d", i))
		}
	}
	if len(leaders) != 1 {
		t.Fatalf("leaders %v, want exactly one", leaders)
	}
	var holder string
	if err := dbx(s).Get(&holder, "SELECT holder FROM argo_leader WHERE name = 'race'"); err != nil || holder != leaders[0] {
		t.Fatalf("stored holder %q (%v), but %s was told it leads", holder, err, leaders[0])
	}
}

// FlagOrphans marks, with a message naming the live instances, the due
// claimable tasks overdue since the cutoff whose name no live instance
// runs; their state and due time stay, and a flagged row is not flagged
// again. A message naming thousands of instances is stored cut to the
// limit, valid UTF-8.
func instancesFlagOrphans(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	orphan := newTask("gone", pending, 5, 0)
	known := newTask("known", pending, 5, 0)
	recent := newTask("gone", pending, 50, 0)
	leased := leasedTask("gone", running, 5, 0, "w", 1, 1000)
	insert(t, s, orphan, known, recent, leased)
	flagged, err := s.FlagOrphans(ctx, []string{"known"}, []string{"i1", "i2"}, 10, 20, 10)
	if err != nil || !slices.Equal(flagged, []string{"gone"}) {
		t.Fatalf("FlagOrphans = %v, %v; want [gone]", flagged, err)
	}
	row := get(t, s, orphan.ID)
	if !strings.HasPrefix(row.ErrorMsg, storage.OrphanMsgPrefix+`"gone"`) || !strings.Contains(row.ErrorMsg, "i1, i2") {
		t.Fatalf("orphan message %q", row.ErrorMsg)
	}
	if row.State != pending || row.ExecuteTime != 5 {
		t.Fatalf("flagged row moved: %s due %d", row.State, row.ExecuteTime)
	}
	for _, id := range []int64{known.ID, recent.ID, leased.ID} {
		if row := get(t, s, id); row.ErrorMsg != "" {
			t.Fatalf("row %d flagged: %q", id, row.ErrorMsg)
		}
	}
	if again, err := s.FlagOrphans(ctx, []string{"known"}, []string{"i1"}, 10, 30, 10); err != nil || len(again) != 0 {
		t.Fatalf("second FlagOrphans = %v, %v; want none (already flagged)", again, err)
	}

	many := newTask("many", pending, 1, 0)
	insert(t, s, many)
	live := make([]string, 3000)
	for i := range live {
		live[i] = fmt.Sprintf("instance-%04d-with-a-long-host-name.example", i)
	}
	if flagged, err := s.FlagOrphans(ctx, []string{"known", "gone"}, live, 10, 20, 10); err != nil || !slices.Equal(flagged, []string{"many"}) {
		t.Fatalf("FlagOrphans with 3000 instances = %v, %v", flagged, err)
	}
	msg := get(t, s, many.ID).ErrorMsg
	if !strings.HasPrefix(msg, storage.OrphanMsgPrefix+`"many"`) || len(msg) > storage.MaxErrorTextBytes || !utf8.ValidString(msg) || !strings.Contains(msg, "bytes cut]") {
		t.Fatalf("message of %d bytes (valid UTF-8 %v) starting %s, want it cut to %d bytes with the cut marker", len(msg), utf8.ValidString(msg), short(msg), storage.MaxErrorTextBytes)
	}
}

// DatabaseTime reads the server's clock: near this machine's (the test
// servers run here), and not going back between two reads.
func instancesDatabaseTime(t *testing.T, e Engine) {
	s := e.Open(t)
	ctx := ctxFor(t)
	first, err := s.DatabaseTime(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(first); d < -time.Minute || d > time.Minute {
		t.Fatalf("database time %s is %s from this machine's", first, d)
	}
	second, err := s.DatabaseTime(ctx)
	if err != nil || second.Before(first) {
		t.Fatalf("second reading %s (%v) before the first %s", second, err, first)
	}
}

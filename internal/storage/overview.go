package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/argo-retry/argo/argotype"
)

// MaxOverviewBuckets caps the buckets of an Overview: a bucket narrower
// than the window divided by it is widened to that.
const MaxOverviewBuckets = 288

// MaxLatenessSamples caps the retries whose lateness an Overview reads, per
// kind of retry (those that failed again, those that succeeded): the most
// recent ones in the window.
const MaxLatenessSamples = 10000

// maxUnrunnableChecks caps the names an Overview checks for due tasks that
// no live instance can run (one short indexed read each).
const maxUnrunnableChecks = 100

// UnpurgedStates are the states an Overview counts in full: every state
// but PurgeableStates (those whose rows only grow until retention purges
// them, counted over the window).
var UnpurgedStates = unpurgedStates()

func unpurgedStates() []State {
	var out []State
	for _, st := range argotype.AllStates {
		if !slices.Contains(PurgeableStates, st) {
			out = append(out, st)
		}
	}
	return out
}

// Overview is what the console's overview page shows, read in bounded work
// (Store.Overview): every statement is a range of an index over the window,
// over the unfinished and dead tasks, or over the live holds, never a scan of
// the whole table.
type Overview struct {
	At     time.Time     // when it was taken
	Since  time.Time     // start of the window
	Bucket time.Duration // width of each bucket, widened to at most MaxOverviewBuckets buckets
	// Counts is the number of tasks per name, tenant and state, by name,
	// tenant, then state. States that only grow until retention purges them
	// (succeeded, recovered, discarded, skipped: PurgeableStates) count the
	// tasks that reached them within the window; every other state (the
	// work in progress and the dead letters) counts all its tasks.
	Counts []NameTenantStateCount
	// Buckets is the outcomes over the window, oldest first, one per
	// bucket from Since (the last one may end after At).
	Buckets []OutcomeBucket
	// Lateness is how late retries started against their due time, per
	// bucket, oldest first, aligned with Buckets.
	Lateness []LatenessBucket
	// DeadGrowth is the tasks per name and tenant that became dead within
	// the window and are dead still, by name then tenant (none: absent).
	DeadGrowth []NameTenantCount
	// Instances is every row of argo_instance, by id.
	Instances []InstanceInfo
	// UnrunnableNames are the task names with tasks due now (pending,
	// retrying or exhausted) that no live instance has a handler for,
	// sorted: nothing will run them until an instance that knows the name
	// starts.
	UnrunnableNames []string
}

// NameTenantStateCount is the number of tasks of one name and tenant in
// one state.
type NameTenantStateCount struct {
	Name   string `db:"task_id"`
	Tenant string `db:"tenant"`
	State  State  `db:"task_status"`
	N      int    `db:"n"`
}

// NameTenantCount is a number of tasks of one name and tenant.
type NameTenantCount struct {
	Name   string `db:"task_id"`
	Tenant string `db:"tenant"`
	N      int    `db:"n"`
}

// OutcomeBucket is what happened in one bucket of an Overview's window.
type OutcomeBucket struct {
	Start time.Time
	// Succeeded and Recovered are the tasks that reached that state in the
	// bucket and stay there; Dead those that became dead in it.
	Succeeded, Recovered, Dead int
	// FailedAttempts is the attempts (fallbacks excluded) that ended in the
	// bucket without success.
	FailedAttempts int
	// Retried is the retries (attempts numbered 2 or more) that ended in
	// the bucket, failed or succeeded (the succeeded ones among the latest
	// MaxLatenessSamples of the window).
	Retried int
}

// LatenessBucket is how late the retries that started in one bucket
// started: the start of a retry minus its due time (the end of the attempt
// before it plus the backoff chosen then); a retry started early (run now
// by an operator) counts as 0.
type LatenessBucket struct {
	Start    time.Time
	Retries  int           // retries sampled in the bucket (0: P50 and P95 are 0)
	P50, P95 time.Duration // percentiles of their lateness
}

// InstanceInfo is one runtime instance as argo_instance records it.
type InstanceInfo struct {
	ID        string
	StartedAt time.Time
	Heartbeat time.Time // its last heartbeat
	Live      bool      // heartbeated at the live cutoff or later
	Names     []string  // task names it has handlers for
	// HeldRetries is the retries (and scheduled calls) it holds in memory
	// to start at their due time; another instance takes them once the
	// hold runs out.
	HeldRetries int
	// Shards is the shards it owns (the runtime fills it in; nil for an
	// instance that is not live or runs no task).
	Shards []int
}

// Overview reads the console's overview at now over the window [since,
// now), in buckets of bucket (widened to at most MaxOverviewBuckets);
// instances that heartbeated at liveCutoff or later are live. Its reads are
// independent of each other and run at once, each on a connection of its
// own, so that the overview takes about as long as its longest read.
func (s *Store) Overview(ctx context.Context, now, since time.Time, bucket time.Duration, liveCutoff time.Time) (*Overview, error) {
	if bucket <= 0 {
		return nil, fmt.Errorf("argo: overview bucket %s must be positive", bucket)
	}
	if !since.Before(now) {
		return nil, fmt.Errorf("argo: overview window start %s must be before now (%s)", since.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	window := now.Sub(since)
	if minBucket := (window + MaxOverviewBuckets - 1) / MaxOverviewBuckets; bucket < minBucket {
		bucket = minBucket
	}
	bucket = max(bucket.Round(time.Millisecond), time.Millisecond)
	n := int((window + bucket - 1) / bucket)
	ov := &Overview{At: now, Since: since, Bucket: bucket, Buckets: make([]OutcomeBucket, n), Lateness: make([]LatenessBucket, n)}
	for i := range n {
		start := since.Add(time.Duration(i) * bucket)
		ov.Buckets[i].Start, ov.Lateness[i].Start = start, start
	}
	sinceMs, bucketMs := ToMillis(since), Millis(bucket.Milliseconds())

	var (
		recent   []NameTenantStateCount
		finished []struct {
			B     int64 `db:"b"`
			State State `db:"task_status"`
			N     int   `db:"n"`
		}
		failed []struct {
			B       int64 `db:"b"`
			N       int   `db:"n"`
			Retried int   `db:"retried"`
		}
		failedAgain, succeededRetries []latenessSample
	)
	reads := []struct {
		what string
		run  func() error
	}{
		{"counts", func() error { return s.db.SelectContext(ctx, &ov.Counts, s.sql.OverviewCounts) }},
		{"counts in the window", func() error { return s.db.SelectContext(ctx, &recent, s.sql.OverviewRecentCounts, sinceMs) }},
		{"finished tasks", func() error {
			return s.db.SelectContext(ctx, &finished, s.sql.OverviewFinishedBuckets, sinceMs, bucketMs, sinceMs)
		}},
		{"failed attempts", func() error {
			return s.db.SelectContext(ctx, &failed, s.sql.OverviewFailedAttemptBuckets, sinceMs, bucketMs, OutcomeSucceeded, sinceMs)
		}},
		{"lateness of failed retries", func() error {
			return s.db.SelectContext(ctx, &failedAgain, s.sql.OverviewFailedRetryLateness, sinceMs, MaxLatenessSamples)
		}},
		{"lateness of succeeded retries", func() error {
			return s.db.SelectContext(ctx, &succeededRetries, s.sql.OverviewSucceededRetryLateness, sinceMs, MaxLatenessSamples)
		}},
		{"dead-letter growth", func() error { return s.db.SelectContext(ctx, &ov.DeadGrowth, s.sql.OverviewDeadGrowth, sinceMs) }},
		{"instances", func() error { return s.overviewInstances(ctx, ov, now, liveCutoff) }},
	}
	errs := make([]error, len(reads))
	var wg sync.WaitGroup
	for i, r := range reads {
		wg.Go(func() {
			if err := r.run(); err != nil {
				errs[i] = fmt.Errorf("argo: overview: %s: %w", r.what, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	ov.Counts = append(ov.Counts, recent...)
	sort.Slice(ov.Counts, func(i, j int) bool {
		a, b := ov.Counts[i], ov.Counts[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		if a.Tenant != b.Tenant {
			return a.Tenant < b.Tenant
		}
		return a.State < b.State
	})
	at := func(b int64) *OutcomeBucket {
		if b >= int64(n) {
			return nil // changed after now (the clocks of several writers)
		}
		return &ov.Buckets[b]
	}
	for _, r := range finished {
		if b := at(r.B); b != nil {
			switch r.State {
			case StateSucceeded:
				b.Succeeded += r.N
			case StateRecovered:
				b.Recovered += r.N
			case StateDead:
				b.Dead += r.N
			}
		}
	}
	for _, r := range failed {
		if b := at(r.B); b != nil {
			b.FailedAttempts += r.N
			b.Retried += r.Retried
		}
	}
	// A succeeded retry is counted from its lateness sample: the task row
	// knows its last attempt was a retry, the index the count reads does not.
	for _, sm := range succeededRetries {
		if b := at(int64(sm.Ended-sinceMs) / int64(bucketMs)); b != nil && sm.Ended >= sinceMs {
			b.Retried++
		}
	}
	ov.setLateness(append(failedAgain, succeededRetries...), sinceMs, bucketMs)
	if err := s.overviewUnrunnable(ctx, ov, now); err != nil {
		return nil, fmt.Errorf("argo: overview: task names no instance runs: %w", err)
	}
	return ov, nil
}

// latenessSample is one retry: when it started, how late against its due
// time, and when it ended (the bucket a succeeded retry counts in).
type latenessSample struct {
	Started Millis `db:"started"`
	Late    Millis `db:"late_ms"`
	Ended   Millis `db:"ended"`
}

// setLateness puts the samples into ov.Lateness by the bucket they started
// in, and computes each bucket's percentiles.
func (ov *Overview) setLateness(samples []latenessSample, sinceMs, bucketMs Millis) {
	per := make([][]time.Duration, len(ov.Lateness))
	for _, sm := range samples {
		b := int64(sm.Started-sinceMs) / int64(bucketMs)
		if sm.Started < sinceMs || b >= int64(len(per)) {
			continue
		}
		per[b] = append(per[b], time.Duration(max(sm.Late, 0))*time.Millisecond)
	}
	for i, ls := range per {
		if len(ls) == 0 {
			continue
		}
		slices.Sort(ls)
		ov.Lateness[i].Retries = len(ls)
		ov.Lateness[i].P50 = nearestRank(ls, 50)
		ov.Lateness[i].P95 = nearestRank(ls, 95)
	}
}

// nearestRank is the p-th percentile of sorted (not empty), nearest-rank.
func nearestRank(sorted []time.Duration, p int) time.Duration {
	k := (p*len(sorted) + 99) / 100
	return sorted[max(k, 1)-1]
}

// overviewInstances reads argo_instance and the holds per owner.
func (s *Store) overviewInstances(ctx context.Context, ov *Overview, now, liveCutoff time.Time) error {
	var rows []struct {
		ID        string `db:"instance_id"`
		Heartbeat Millis `db:"heartbeat_at"`
		StartedAt Millis `db:"started_at"`
		Names     string `db:"task_names"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.sql.OverviewInstances); err != nil {
		return err
	}
	var holds []struct {
		Owner string `db:"lease_owner"`
		N     int    `db:"n"`
	}
	if err := s.db.SelectContext(ctx, &holds, s.sql.OverviewHolds, ToMillis(now)); err != nil {
		return err
	}
	held := map[string]int{}
	for _, h := range holds {
		held[h.Owner] = h.N
	}
	for _, r := range rows {
		var names []string
		if r.Names != "" {
			names = strings.Split(r.Names, "\n")
		}
		ov.Instances = append(ov.Instances, InstanceInfo{
			ID: r.ID, StartedAt: r.StartedAt.Time(), Heartbeat: r.Heartbeat.Time(),
			Live: r.Heartbeat >= ToMillis(liveCutoff), Names: names, HeldRetries: held[r.ID],
		})
	}
	return nil
}

// overviewUnrunnable fills ov.UnrunnableNames: of the names with claimable
// tasks in ov.Counts that no live instance has a handler for, those with a
// task due at now.
func (s *Store) overviewUnrunnable(ctx context.Context, ov *Overview, now time.Time) error {
	runnable := map[string]bool{}
	for _, in := range ov.Instances {
		if in.Live {
			for _, n := range in.Names {
				runnable[n] = true
			}
		}
	}
	var candidates []string
	for _, c := range ov.Counts {
		if c.N > 0 && slices.Contains(ClaimableStates, c.State) && !runnable[c.Name] && !slices.Contains(candidates, c.Name) {
			candidates = append(candidates, c.Name)
		}
	}
	sort.Strings(candidates)
	if len(candidates) > maxUnrunnableChecks {
		candidates = candidates[:maxUnrunnableChecks]
	}
	for _, name := range candidates {
		var due int
		if err := s.db.GetContext(ctx, &due, s.sql.OverviewNameDue, name, ToMillis(now)); err != nil {
			return err
		}
		if due > 0 {
			ov.UnrunnableNames = append(ov.UnrunnableNames, name)
		}
	}
	return nil
}

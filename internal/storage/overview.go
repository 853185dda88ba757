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

// The caps of an Overview (see argotype).
const (
	MaxOverviewBuckets = argotype.MaxOverviewBuckets
	MaxLatenessSamples = argotype.MaxLatenessSamples
)

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

// The console's overview and its parts (see argotype).
type (
	Overview             = argotype.Overview
	NameTenantStateCount = argotype.NameTenantStateCount
	NameTenantCount      = argotype.NameTenantCount
	OutcomeBucket        = argotype.OutcomeBucket
	LatenessBucket       = argotype.LatenessBucket
	InstanceInfo         = argotype.InstanceInfo
)

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
	setLateness(ov, append(failedAgain, succeededRetries...), sinceMs, bucketMs)
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
func setLateness(ov *Overview, samples []latenessSample, sinceMs, bucketMs Millis) {
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

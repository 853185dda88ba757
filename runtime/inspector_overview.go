package runtime

import (
	"context"
	"time"

	"github.com/argo-retry/argo/argotype"
)

// DefaultCountBound is the bound CountUpTo stops at when given none
// (max <= 0): 10,000.
const DefaultCountBound = argotype.DefaultCountBound

// CountUpTo counts the tasks f selects, ignoring Limit and Offset, up to
// max (DefaultCountBound when max <= 0): n is exact when more is false; when
// more is true at least max+1 tasks match and n is max. The database reads
// at most max+1 of them, so a console can show "10000+" on a table of
// millions of rows as fast as a page of it.
func (in *Inspector) CountUpTo(ctx context.Context, f Filter, max int) (n int, more bool, err error) {
	sf, err := in.resolveNames(ctx, f)
	if err != nil {
		return 0, false, err
	}
	return in.store.CountUpTo(ctx, sf, max)
}

// Overview is what the console's overview page shows (argotype.Overview
// documents its fields).
type Overview = argotype.Overview

// NameTenantStateCount is the number of tasks of one name and tenant in
// one state.
type NameTenantStateCount = argotype.NameTenantStateCount

// NameTenantCount is a number of tasks of one name and tenant.
type NameTenantCount = argotype.NameTenantCount

// OutcomeBucket is what happened in one bucket of an Overview's window.
type OutcomeBucket = argotype.OutcomeBucket

// LatenessBucket is how late the retries that started in one bucket of an
// Overview's window started.
type LatenessBucket = argotype.LatenessBucket

// InstanceInfo is one runtime instance as argo_instance records it, with
// its held retries and shards.
type InstanceInfo = argotype.InstanceInfo

// MaxOverviewBuckets caps the buckets of an Overview: a narrower bucket is
// widened to (now - since) / MaxOverviewBuckets (288).
const MaxOverviewBuckets = argotype.MaxOverviewBuckets

// MaxLatenessSamples caps the retries whose lateness an Overview reads, per
// kind of retry (failed again, succeeded): the latest 10,000 of the window.
const MaxLatenessSamples = argotype.MaxLatenessSamples

// Config's defaults, for an Inspector from NewInspector: InstanceTimeout
// (3 × HeartbeatInterval's 2 s) and Shards.
const (
	overviewInstanceTimeout = 6 * time.Second
	overviewShards          = 64
)

// Overview reads the console's overview over the window [since, now) in
// buckets of bucket (widened so that there are at most MaxOverviewBuckets):
// counts per name, tenant and state, outcomes and retry lateness per
// bucket, dead-letter growth, the instances with their shards and held
// retries, and the task names with due tasks no live instance can run.
// Every read is bounded (argotype.Overview says how), so it stays fast on a table of
// millions of rows.
//
// An instance is live when it heartbeated within the runtime's
// InstanceTimeout (an Inspector from NewInspector: the default, 3 × 2 s);
// the shards of the live instances that run tasks are their split of the
// runtime's Config.Shards (NewInspector: the default, 64), as every
// instance that runs the same task names computes it.
func (in *Inspector) Overview(ctx context.Context, since time.Time, bucket time.Duration) (*Overview, error) {
	now := in.now()
	timeout, shards := in.instanceTimeout, in.shards
	if timeout <= 0 {
		timeout = overviewInstanceTimeout
	}
	if shards <= 0 {
		shards = overviewShards
	}
	ov, err := in.store.Overview(ctx, now, since, bucket, now.Add(-timeout))
	if err != nil {
		return nil, err
	}
	var running []string
	for _, i := range ov.Instances {
		if i.Live && len(i.Names) > 0 {
			running = append(running, i.ID)
		}
	}
	for k, i := range ov.Instances {
		if i.Live && len(i.Names) > 0 {
			ov.Instances[k].Shards = splitShards(running, i.ID, shards)
		}
	}
	return ov, nil
}

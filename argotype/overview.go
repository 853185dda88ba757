package argotype

import "time"

// MaxOverviewBuckets caps the buckets of an Overview: a bucket narrower
// than the window divided by it is widened to that.
const MaxOverviewBuckets = 288

// MaxLatenessSamples caps the retries whose lateness an Overview reads, per
// kind of retry (those that failed again, those that succeeded): the most
// recent ones in the window.
const MaxLatenessSamples = 10000

// Overview is what the console's overview page shows (the Inspector's
// Overview), read in bounded work: every statement is a range of an index
// over the window, over the unfinished and dead tasks, or over the live
// holds, never a scan of the whole table.
type Overview struct {
	At     time.Time     // when it was taken
	Since  time.Time     // start of the window
	Bucket time.Duration // width of each bucket, widened to at most MaxOverviewBuckets buckets
	// Counts is the number of tasks per name, tenant and state, by name,
	// tenant, then state. States that only grow until retention purges them
	// (succeeded, recovered, discarded, skipped) count the tasks that
	// reached them within the window; every other state (the work in
	// progress and the dead letters) counts all its tasks.
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
	Name   string `db:"task_id"`     // the task name
	Tenant string `db:"tenant"`      // the tenant ("": none)
	State  State  `db:"task_status"` // the state
	N      int    `db:"n"`           // tasks of Name and Tenant in State
}

// NameTenantCount is a number of tasks of one name and tenant.
type NameTenantCount struct {
	Name   string `db:"task_id"` // the task name
	Tenant string `db:"tenant"`  // the tenant ("": none)
	N      int    `db:"n"`       // the tasks
}

// OutcomeBucket is what happened in one bucket of an Overview's window.
type OutcomeBucket struct {
	Start time.Time // the bucket's start; it ends at Start + Overview.Bucket
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
	Start    time.Time     // the bucket's start, as OutcomeBucket.Start
	Retries  int           // retries sampled in the bucket (0: P50 and P95 are 0)
	P50, P95 time.Duration // percentiles of their lateness
}

// InstanceInfo is one runtime instance as argo_instance records it, with
// its held retries and shards.
type InstanceInfo struct {
	ID        string    // the instance's id (Config.InstanceID)
	StartedAt time.Time // when it started
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

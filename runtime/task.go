package runtime

import (
	"time"

	"github.com/argo-retry/argo/argotype"
)

// Millis is a wall-clock instant in Unix milliseconds, the unit of every time
// column of argo_task (argotype.Millis).
type Millis = argotype.Millis

func toMillis(t time.Time) Millis { return Millis(t.UnixMilli()) }

// Mode says when the first attempt runs (argotype.Mode).
type Mode = argotype.Mode

// The modes (see argotype.Mode).
const (
	Immediate = argotype.Immediate
	Scheduled = argotype.Scheduled
)

// Thread says where an immediate first attempt runs (argotype.Thread).
type Thread = argotype.Thread

// The threads (see argotype.Thread).
const (
	Async = argotype.Async
	Sync  = argotype.Sync
)

// Task is one row of argo_task: one durable invocation (argotype.Task).
type Task = argotype.Task

// Attempt is the record of one attempt (or fallback run) of a task (argotype.Attempt).
type Attempt = argotype.Attempt

// Attempt outcomes recorded in argo_task_attempt.outcome.
const (
	OutcomeSucceeded    = argotype.OutcomeSucceeded
	OutcomeFailed       = argotype.OutcomeFailed
	OutcomeDeferred     = argotype.OutcomeDeferred
	OutcomePermanent    = argotype.OutcomePermanent
	OutcomePanicked     = argotype.OutcomePanicked
	OutcomeTimeout      = argotype.OutcomeTimeout
	OutcomeLeaseExpired = argotype.OutcomeLeaseExpired
)

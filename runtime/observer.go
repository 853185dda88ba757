package runtime

import "time"

// Observer receives the runtime's events, for metrics. Methods are called
// on the worker path and must not block. The metrics package implements it
// with Prometheus counters and histograms; set it as Config.Observer.
type Observer interface {
	// Submitted: a task row was written.
	Submitted(task string)
	// AttemptDone: an attempt (kind "attempt") or fallback (kind "fallback")
	// ended with outcome (OutcomeSucceeded, OutcomeFailed, …) after
	// duration; lag is how late it started against its due time.
	AttemptDone(task, kind, outcome string, duration, lag time.Duration)
	// Finished: a task reached a terminal or waiting state (succeeded, retrying, dead, recovered, …).
	Finished(task string, state State)
	// AlertFired: an alert expression held.
	AlertFired(task string)
	// LeaseRescued: an expired lease was taken back from a vanished worker.
	LeaseRescued(task string)
	// ClaimError: claiming due tasks failed (the database is unreachable, say).
	ClaimError(err error)
}

func (rt *Runtime) metricSubmitted(name string) {
	if o := rt.cfg.Observer; o != nil {
		o.Submitted(name)
	}
}

func (rt *Runtime) observe(fn func(o Observer)) {
	if o := rt.cfg.Observer; o != nil {
		fn(o)
	}
}

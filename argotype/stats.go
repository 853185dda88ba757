package argotype

import "time"

// NameStateCount is the number of tasks of one name in one state.
type NameStateCount struct {
	Name  string `db:"task_id"`     // the task name
	State State  `db:"task_status"` // the state
	N     int    `db:"n"`           // tasks of Name in State
}

// DueTask is the task that has waited longest past its due time.
type DueTask struct {
	ID    int64         // its row (argo_task.id)
	Name  string        // its task name
	State State         // pending or retrying
	Due   time.Time     // when its next attempt was due
	Lag   time.Duration // how long ago that was: the Stats' At - Due
}

// Stats is a snapshot of the tables for operators (argoctl stats), as the
// Inspector's Stats takes it.
type Stats struct {
	At      time.Time        // when it was taken (the Inspector's clock)
	Window  time.Duration    // the window of the rates
	Total   int              // tasks in argo_task
	ByState map[State]int    // tasks per state (states with none are absent)
	ByName  []NameStateCount // tasks per name and state, by name then state
	// OldestDue is the pending or retrying task due longest ago (nil when
	// none is due): a large Lag means workers are not keeping up, or none runs.
	OldestDue *DueTask

	// Over the window: attempts (kind "attempt", fallbacks excluded) that
	// finished, how many of them did not succeed, and their ratio (0 with no
	// attempts). Succeeded attempts are counted from the task rows, so those
	// of tasks purged by retention are not.
	Attempts, FailedAttempts int
	RetryRate                float64
	// Over the window, from argo_task: tasks that reached a final state
	// (succeeded, recovered or dead) and stay there, those dead, and the
	// ratio (0 with none finished). Rows already purged by retention or
	// requeued are not counted.
	Finished, Dead int
	DeadRate       float64
}

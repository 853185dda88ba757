package argotype

import "time"

// AlertEnv is what an alert expression sees. Field names are the expression's
// names: executeTimes >= 3, lastError contains "timeout", dead, ….
type AlertEnv struct {
	ExecuteTimes int     `expr:"executeTimes"` // attempts run so far as the retry policy counts them (deferred ones, RetryAfter, left out), the failed one included
	MaxAttempts  int     `expr:"maxAttempts"`  // attempt budget, 0 = unlimited
	TaskName     string  `expr:"taskName"`
	TaskID       int64   `expr:"taskId"`
	LastError    string  `expr:"lastError"`
	Permanent    bool    `expr:"permanent"` // the error was Permanent
	WillRetry    bool    `expr:"willRetry"` // another attempt is scheduled
	Exhausted    bool    `expr:"exhausted"` // no attempt left: the fallback or dead letter follows
	ShardKey     int     `expr:"shardKey"`
	AgeSeconds   float64 `expr:"ageSeconds"` // since the task was created
}

// AlertEvent is passed to an alert action.
type AlertEvent struct {
	AlertEnv
	Expression string
	At         time.Time
}

// Package runtime makes function calls durable. Each call of a generated
// wrapper is persisted as a row of argo_task before it runs; the runtime then
// runs it (now in the caller's goroutine, now on its worker pool, or at a
// scheduled time), retries failures with backoff across restarts and across
// instances, and finally runs the fallback and alert hooks.
//
// A Runtime is started with Start and a Config (DSN "sqlite:argo.db" for the
// embedded default, or a MySQL DSN), gets its handlers from the code argogen
// generates (or from Register with hand-written TaskDefs), and is stopped
// with Stop. Inspector reads and repairs the same tables for operators.
//
// The task lifecycle is the state machine in state.go; retry timing is
// RetryPolicy in retry_policy.go. The Runtime type, Start and Stop are in
// runtime.go; the background services (completer, held retries,
// heartbeat, the maintenance role, rescue, orphan flagging, purge) are
// internal/maintenance's, wired in services.go.
package runtime

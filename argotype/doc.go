// Package argotype holds the types every part of argo shares: task states and
// their transitions, the retry policy and its backoff and jitter kinds, the
// task and attempt records, attempt outcome names, the alert expression
// environment, the Permanent and Undecodable error markers, the records the
// runtime's Inspector returns (Stats, the operator trail, the Overview,
// SchemaError), and the sentinel errors and limits callers match on
// (ErrNotFound, ErrDuplicate, MaxOrderKeyBytes, ...).
//
// It imports only the standard library, so that a program needing these
// types without a database — argogen above all — does not link the SQLite
// and MySQL drivers. Package runtime re-exports every name declared here
// (runtime.RetryPolicy is argotype.RetryPolicy), so code written against
// runtime, generated code included, needs no change; new shared code may
// import this package directly.
package argotype

// Package argotype holds the types every part of argo shares: task states and
// their transitions, the retry policy and its backoff and jitter kinds, the
// task and attempt records, attempt outcome names, the alert expression
// environment, the Permanent and Undecodable error markers, and the records
// the Inspector returns (Stats, the operator trail, the Overview).
//
// It imports only the standard library, so that a program needing these
// types without a database — argogen above all — does not link the SQLite
// and MySQL drivers. Package runtime re-exports every name declared here
// (runtime.RetryPolicy is argotype.RetryPolicy), so code written against
// runtime, generated code included, needs no change; new shared code may
// import this package directly.
package argotype

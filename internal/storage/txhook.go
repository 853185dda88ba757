package storage

import "context"

// TxPoint is where in one try of a write transaction a TxHook runs.
type TxPoint int

const (
	// TryBegin is before the try's transaction begins (and before the
	// engine's write lock is taken).
	TryBegin TxPoint = iota
	// TryCommit is after the try's work succeeded, before its COMMIT.
	TryCommit
)

// TxHook, for tests only, runs at TryBegin and TryCommit of each try (1,
// 2, …) of every write transaction run with a context carrying it
// (WithTxHook). An error at TryCommit rolls the try back and is handled
// as the engine's own error would be: a lock conflict the driver reports
// as retryable (IsRetryableLockError) runs the transaction again. That is
// how a test makes a transaction's first try lose to a deadlock after
// its reads, deterministically. An error at TryBegin fails the try
// before it starts.
type TxHook func(ctx context.Context, try int, at TxPoint) error

type txHookKey struct{}

// WithTxHook returns ctx carrying h for the write transactions run with it.
func WithTxHook(ctx context.Context, h TxHook) context.Context {
	return context.WithValue(ctx, txHookKey{}, h)
}

// txHookOf returns the TxHook ctx carries, or nil.
func txHookOf(ctx context.Context) TxHook {
	h, _ := ctx.Value(txHookKey{}).(TxHook)
	return h
}

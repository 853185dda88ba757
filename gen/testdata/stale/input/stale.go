// Package stale has a previous argo_gen.go that no longer compiles: its
// wrapper has the old signature and it declares a helper that user code
// also declares now. Regeneration must still work.
package stale

import "context"

// Ship ships an order; it gained a parameter since the last go generate.
//
//argo:retry retries=2
func Ship(ctx context.Context, order int64, carrier string) error { return nil }

// argoKey is a user declaration that the old generated file also declared.
func argoKey() {}

// Caller calls the wrapper with the new signature.
func Caller(ctx context.Context) error { return ShipDurable(ctx, 1, "ups") }

// Package modes covers schedule and sync modes.
package modes

import "context"

// Later runs 90 seconds after it is called.
//
//argo:retry mode=schedule first-delay=90s
func Later(ctx context.Context, id int) error { return nil }

// Tonight runs at the next poll.
//
//argo:retry mode=schedule
func Tonight(ctx context.Context, id int) error { return nil }

// Now runs its first attempt in the caller's goroutine.
//
//argo:retry thread=sync retries=2 timeout=5s
func Now(ctx context.Context, id int) error { return nil }

// Explicit spells out every default.
//
//argo:retry mode=immediate thread=async retries=3 backoff=exponential delay=1s multiplier=2 max-delay=1m jitter=10%
func Explicit(ctx context.Context) error { return nil }

// Quoted uses quoted values.
//
//argo:retry name="modes quoted" "alert=executeTimes > 1" jitter=`equal` unique-by=key
func Quoted(ctx context.Context, key string) error { return nil }

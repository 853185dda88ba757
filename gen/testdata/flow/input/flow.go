// Package flow has tasks under flow control: a capped, rate-limited group
// with a breaker shared by two tasks, and a task that is its own group.
package flow

import "context"

// Print and Scan share the printer: at most 4 at once, 50 a second (burst
// 100), a breaker opened by 5 failures within 30 s, cool-down 10 s.
//
//argo:retry limit=printer:4 rate=printer:50/s burst=100 breaker=printer:5/30s cooldown=10s
func Print(ctx context.Context, doc string) error { return nil }

// Scan is another task of the printer group.
//
//argo:retry limit=printer:4 rate=50/s burst=100 breaker=printer:5/30s cooldown=10s
func Scan(ctx context.Context, page int) error { return nil }

// Mail is its own group: 120 a minute, a breaker at a 50% failure ratio,
// retries at most 20% of the first attempts of each minute.
//
//argo:retry rate=120/m breaker=50%/1m retry-budget=20%/1m
func Mail(ctx context.Context, to string) error { return nil }

// Package basic has plain annotated functions with default and custom directives.
package basic

import (
	"context"
	"errors"
)

// Notify sends a message; all defaults.
//
//argo:retry
func Notify(ctx context.Context, userID int64, message string) error {
	if message == "" {
		return errors.New("empty message")
	}
	return nil
}

// Ping takes no context and no parameters.
//
//argo:retry retries=0 backoff=fixed delay=250ms jitter=none
func Ping() error { return nil }

// resize is unexported, with a custom name and a linear backoff.
//
//argo:retry name=images.resize retries=unlimited backoff=linear delay=2s max-delay=0 jitter=+300ms timeout=30s
func resize(ctx context.Context, id string, width, height int) error { return nil }

// Charge calls back its own wrapper (no initialization cycle).
//
//argo:retry retries=15 delay=5s multiplier=1.5 max-delay=1h jitter=full shard-by=account unique-by=invoice
func Charge(ctx context.Context, account string, invoice int, cents int64) error {
	if cents > 1000 {
		return ChargeDurable(ctx, account, invoice, cents/2)
	}
	return nil
}

// Invoice stores each call for the tenant its tenant parameter names.
//
//argo:retry tenant-by=tenant
func Invoice(ctx context.Context, tenant string, amount int64) error { return nil }

// Receipt has no context: its tenant comes from tenant-by alone.
//
//argo:retry tenant-by=customer shard-by=customer
func Receipt(customer int, text string) error { return nil }

package main

//go:generate go run github.com/argo-retry/argo/cmd/argogen

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

var calls atomic.Int32

// SendReceipt emails a receipt; the mail server is flaky, so the first two
// attempts fail.
//
//argo:retry retries=3 backoff=exponential delay=200ms jitter=none
func SendReceipt(ctx context.Context, orderID string, amountCents int64) error {
	if calls.Add(1) <= 2 {
		return errors.New("smtp: 421 service not available")
	}
	fmt.Printf("receipt for %s (%d.%02d) sent\n", orderID, amountCents/100, amountCents%100)
	return nil
}

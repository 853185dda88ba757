package main

//go:generate go run github.com/argo-retry/argo/cmd/argogen

import (
	"context"
	"errors"
)

// ChargeCard charges an order's card; the gateway is down, so every attempt
// fails. From the second failed attempt on, each alert goes to the channel
// named ops in runtime.Config.AlertChannels.
//
//argo:retry retries=2 backoff=fixed delay=50ms jitter=none alert="executeTimes >= 2" alert-channel=ops
func ChargeCard(ctx context.Context, orderID string) error {
	return errors.New("card gateway: 503 service unavailable")
}

// Package alertchannel covers alert-channel=, alone and next to alert-action=.
package alertchannel

import (
	"context"

	"github.com/argo-retry/argo/runtime"
)

// Charge alerts two channels.
//
//argo:retry retries=3 alert="executeTimes >= 2" alert-channel=ops,mail.oncall
func Charge(ctx context.Context, orderID string) error { return nil }

// Refund alerts a channel and runs an action.
//
//argo:retry alert="exhausted" alert-action=pageOps alert-channel=ops
func Refund(ctx context.Context, orderID string) error { return nil }

func pageOps(ctx context.Context, ev runtime.AlertEvent) error { return nil }

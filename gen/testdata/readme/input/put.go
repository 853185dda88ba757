// Package put is the README's example: the design brief's put-wall light.
package put

import (
	"context"

	"github.com/argo-retry/argo/runtime"
)

// SlotID names a put-wall slot.
type SlotID int

// Color is a light color.
type Color string

// Peripherals talks to the put-wall hardware.
type Peripherals struct{ Endpoint string }

// LightOn asks the peripheral system to light a put-wall slot.
//
//argo:retry retries=5 backoff=exponential delay=1s max-delay=1m fallback=lightOnByHand alert="executeTimes >= 3" alert-action=pageOps
func (c *Peripherals) LightOn(ctx context.Context, slot SlotID, color Color) error { return nil }

func (c *Peripherals) lightOnByHand(ctx context.Context, slot SlotID, color Color) error {
	return nil
}

func pageOps(ctx context.Context, ev runtime.AlertEvent) error { return nil }

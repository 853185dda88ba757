// Package methods has annotated methods with pointer and value receivers.
package methods

import "context"

// SlotID names a put-wall slot.
type SlotID int

// Color is a light color.
type Color string

// Peripherals talks to the put-wall hardware.
type Peripherals struct{ Endpoint string }

// LightOn asks the peripheral system to light a slot.
//
//argo:retry retries=5 delay=1s max-delay=1m shard-by=slot
func (c *Peripherals) LightOn(ctx context.Context, slot SlotID, color Color) error { return nil }

// LightOff has no context parameter.
//
//argo:retry
func (c *Peripherals) LightOff(slot SlotID) error { return nil }

// printer has a value receiver and is unexported.
type printer struct{ queue string }

// print prints a label.
//
//argo:retry backoff=fixed delay=3s
func (p printer) print(ctx context.Context, label string, copies int) error { return nil }

// Reset is a plain function next to the methods.
//
//argo:retry
func Reset(ctx context.Context) error { return nil }

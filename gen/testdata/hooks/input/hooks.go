// Package hooks covers fallbacks and alert actions.
package hooks

import (
	"context"
	"log"

	"github.com/argo-retry/argo/runtime"
)

// Send sends a message.
//
//argo:retry retries=5 fallback=sendByHand alert="executeTimes >= 3" alert-action=pageOps
func Send(ctx context.Context, to string, body []byte) error { return nil }

func sendByHand(ctx context.Context, to string, body []byte) error {
	log.Printf("giving up on %s: %v", to, runtime.FallbackCause(ctx))
	return nil
}

func pageOps(ctx context.Context, ev runtime.AlertEvent) error { return nil }

// Bare has a fallback without a context.
//
//argo:retry fallback=bareFallback alert="exhausted || lastError contains 'timeout'"
func Bare(ctx context.Context, n int, rest ...string) error { return nil }

func bareFallback(n int, rest ...string) error { return nil }

// Gateway has hook methods.
type Gateway struct{ URL string }

// Post posts an event; its hooks are methods of Gateway.
//
//argo:retry fallback=postLater alert="executeTimes >= 2 && !willRetry" alert-action=alarm
func (g *Gateway) Post(ctx context.Context, event string) error { return nil }

func (g *Gateway) postLater(ctx context.Context, event string) error { return nil }

func (g Gateway) alarm(ctx context.Context, ev runtime.AlertEvent) error { return nil }

// Relay is a method whose hooks are package-level functions.
//
//argo:retry fallback=relayFallback alert="executeTimes >= 3" alert-action=pageOps
func (g Gateway) Relay(ctx context.Context, event string) error { return nil }

func relayFallback(ctx context.Context, event string) error { return nil }

// Base has a hook method promoted into Relayer.
type Base struct{ Name string }

func (b *Base) baseFallback(ctx context.Context, event string) error { return nil }

// Relayer embeds Base.
type Relayer struct{ Base }

// Forward has a value receiver and a promoted pointer-receiver fallback, so
// ArgoRegisterRelayer takes a *Relayer.
//
//argo:retry fallback=baseFallback
func (r Relayer) Forward(ctx context.Context, event string) error { return nil }

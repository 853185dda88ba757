package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/argo-retry/argo/runtime"
)

// OrderID names an outbound order.
type OrderID string

// Slot is a put-wall slot.
type Slot struct {
	Wall string `json:"wall"`
	Cell int    `json:"cell"`
}

// Color of a put-wall light.
type Color string

// Line is one finished order line reported upstream.
type Line struct {
	SKU string `json:"sku"`
	Qty int    `json:"qty"`
}

// Systems calls the downstream systems over HTTP.
type Systems struct {
	Dispatch, Lights, Printer, Upstream string // base URLs
	Client                              *http.Client

	mu     sync.Mutex
	Slips  []string // pick slips printed by hand (fallback of LightOn)
	Alerts []string // operator pages (alert action)
}

// post sends one JSON request, with the attempt's idempotency key, and maps
// the answer to an error: 4xx is permanent (no retry can fix it), anything
// else non-2xx is transient.
func (s *Systems) post(ctx context.Context, url string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return runtime.Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return runtime.Permanent(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", runtime.IdempotencyKey(ctx))
	resp, err := s.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return runtime.Permanent(fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(msg)))
	}
	return fmt.Errorf("%s: %s: %s", url, resp.Status, bytes.TrimSpace(msg))
}

// RequestTruck asks the vehicle scheduler for a truck at a dock ("the truck
// never comes" if this is lost). All tasks of one order share a shard.
//
//argo:retry retries=4 backoff=exponential delay=100ms multiplier=2 max-delay=1s jitter=equal timeout=2s shard-by=order alert="executeTimes >= 2" alert-action=PageOperator
func (s *Systems) RequestTruck(ctx context.Context, order OrderID, dock int) error {
	return s.post(ctx, s.Dispatch+"/truck", map[string]any{"order": order, "dock": dock})
}

// Depart tells the truck to leave, a little after loading ends: scheduled
// with a first delay, linear backoff.
//
//argo:retry mode=schedule first-delay=500ms retries=4 backoff=linear delay=100ms jitter=10% shard-by=order
func (s *Systems) Depart(ctx context.Context, order OrderID, truck string) error {
	return s.post(ctx, s.Dispatch+"/depart", map[string]any{"order": order, "truck": truck})
}

// LightOn lights a put-wall slot. It runs in the caller's goroutine, which
// sees the first attempt's outcome; when the light never turns on, a pick
// slip is printed by hand.
//
//argo:retry thread=sync retries=1 backoff=fixed delay=100ms jitter=none fallback=PickSlipByHand alert="exhausted" alert-action=PageOperator
func (s *Systems) LightOn(ctx context.Context, slot Slot, color Color) error {
	return s.post(ctx, s.Lights+"/on", map[string]any{"slot": slot, "color": color})
}

// PickSlipByHand is LightOn's fallback: same parameters.
func (s *Systems) PickSlipByHand(ctx context.Context, slot Slot, color Color) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Slips = append(s.Slips, fmt.Sprintf("%s-%d (%s): %v", slot.Wall, slot.Cell, color, runtime.FallbackCause(ctx)))
	return nil
}

// LightOff turns a slot's light off.
//
//argo:retry retries=3 backoff=exponential delay=50ms jitter=full
func (s *Systems) LightOff(ctx context.Context, slot Slot) error {
	return s.post(ctx, s.Lights+"/off", map[string]any{"slot": slot})
}

// PrintLabel prints a shipping label. An unknown template is refused with a
// 4xx: a permanent error, no retry, and with no fallback the task is dead.
//
//argo:retry retries=3 backoff=fixed delay=100ms unique-by=order
func (s *Systems) PrintLabel(ctx context.Context, order OrderID, template string, copies *int) error {
	n := 1
	if copies != nil {
		n = *copies
	}
	return s.post(ctx, s.Printer+"/label", map[string]any{"order": order, "template": template, "copies": n})
}

// ReportFinished feeds a finished order back to the upstream ERP. It is
// submitted in the same transaction as the order's status change.
//
//argo:retry retries=6 backoff=exponential delay=100ms max-delay=800ms jitter=+50ms unique-by=order shard-by=order
func (s *Systems) ReportFinished(ctx context.Context, order OrderID, lines []Line, attrs map[string]string) error {
	return s.post(ctx, s.Upstream+"/feedback", map[string]any{"order": order, "lines": lines, "attrs": attrs})
}

// PageOperator is the alert action: it pages the operator on duty.
func (s *Systems) PageOperator(ctx context.Context, ev runtime.AlertEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Alerts = append(s.Alerts, fmt.Sprintf("%s task %d attempt %d: %s", ev.TaskName, ev.TaskID, ev.ExecuteTimes, ev.LastError))
	return nil
}

// Paged returns the pages sent so far.
func (s *Systems) Paged() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.Alerts...)
}

// HandSlips returns the pick slips printed by hand so far.
func (s *Systems) HandSlips() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.Slips...)
}

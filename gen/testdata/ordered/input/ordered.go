// Package ordered covers order-by: calls with the same key run one at a
// time, in submit order.
package ordered

import "context"

// Dispatch sends a truck for an order; the calls of one order run in order.
//
//argo:retry retries=3 order-by=orderID shard-by=orderID
func Dispatch(ctx context.Context, orderID int64, truck string) error { return nil }

// Light lights a slot; unordered.
//
//argo:retry retries=1
func Light(slot int) error { return nil }

// Package params covers every supported kind of parameter.
package params

import (
	"context"
	"encoding/json"
	"net/netip"
	"time"

	"github.com/argo-retry/argo/gen/testdata/params/input/other"
)

// Order is a struct with nested types.
type Order struct {
	ID       int64             `json:"id"`
	Lines    []Line            `json:"lines"`
	Tags     map[string]string `json:"tags,omitempty"`
	Parent   *Order            `json:"parent"` // recursive
	When     time.Time         `json:"when"`
	internal int               `json:"-"`
	Meta
}

// Line is an order line.
type Line struct {
	SKU string
	Qty int
}

// Meta is embedded.
type Meta struct{ Source string }

type weight float64

// IDs is a named slice.
type IDs []int64

// Pair is a generic type used with a type argument.
type Pair[K comparable, V any] struct {
	Key K
	Val V
}

// Alias is an alias of Line.
type Alias = Line

// Everything takes one parameter of each supported kind.
//
//argo:retry
func Everything(ctx context.Context, o Order, po *Order, ids IDs, m map[int]bool, arr [3]byte,
	w weight, ext other.Thing, extp *other.Thing, raw json.RawMessage, addr netip.Addr,
	p Pair[string, int], a Alias, anon struct {
		X int `json:"x"`
	}, d time.Duration, b []byte, tm map[netip.Addr]int, pp **int) error {
	return nil
}

// Variadic takes a variadic parameter and no context.
//
//argo:retry
func Variadic(prefix string, names ...string) error { return nil }

// Unnamed has unnamed and blank parameters.
//
//argo:retry
func Unnamed(context.Context, int, string) error { return nil }

// Blank has a blank parameter.
//
//argo:retry
func Blank(ctx context.Context, _ int, x string) error { return nil }

// Clash has parameter names that clash with the generated code.
//
//argo:retry
func Clash(tx int, context string, argoKey bool, p1 int, time int, json string) error {
	return nil
}

// Locals has parameter names of the locals of the generated wrappers and
// their submit helper.
//
//argo:retry
func Locals(err string, call int, after bool) error { return nil }

// Edge's FDurableAfter line is 119 columns before its " {", 121 with it:
// its parameters go one a line.
//
//argo:retry
func Edge(ctx context.Context, sxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxs string) error { return nil }

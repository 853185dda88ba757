package errors

import (
	"context"
	"fmt"
	"unsafe"
)

// Results returns more than error.
//
//argo:retry
func Results(ctx context.Context) (int, error) { return 0, nil }

// NoResult returns nothing.
//
//argo:retry
func NoResult(ctx context.Context) {}

// Params has one unsupported parameter of each kind.
//
//argo:retry
func Params(ctx context.Context, ch chan int, fn func(), p unsafe.Pointer, a any, err error,
	s fmt.Stringer, h Holder, k map[Key]int, c complex128, hidden Hidden, ctx2 context.Context) error {
	return nil
}

// Holder holds a function.
type Holder struct {
	Name string
	Done func()
}

// Key is a struct, not a valid JSON map key.
type Key struct{ A, B int }

// Hidden has an unexported field.
type Hidden struct {
	Visible int
	secret  string
}

// Generic has type parameters.
//
//argo:retry
func Generic[T any](ctx context.Context, v T) error { return nil }

// Box is generic.
type Box[T any] struct{ v T }

// Put is a method of a generic type.
//
//argo:retry
func (b *Box[T]) Put(ctx context.Context) error { return nil }

// Undefined has a parameter whose type does not exist.
//
//argo:retry
func Undefined(ctx context.Context, x Missing) error { return nil }

package errors

import (
	"context"

	"github.com/argo-retry/argo/runtime"
)

// NoHooks names hooks that do not exist.
//
//argo:retry fallback=nowhere alert="exhausted" alert-action=nobody
func NoHooks(ctx context.Context, n int) error { return nil }

// BadHooks names hooks with the wrong signatures.
//
//argo:retry fallback=wrongParams alert="exhausted" alert-action=wrongAction
func BadHooks(ctx context.Context, n int, s string) error { return nil }

func wrongParams(ctx context.Context, n int) error { return nil }

func wrongAction(ev runtime.AlertEvent) error { return nil }

// BadResult has a fallback with the wrong result.
//
//argo:retry fallback=noError
func BadResult(ctx context.Context) error { return nil }

func noError(ctx context.Context) {}

// VarHook names a variable.
//
//argo:retry fallback=hookVar
func VarHook(ctx context.Context) error { return nil }

var hookVar = func(ctx context.Context) error { return nil }

// Svc has a method whose fallback is a field.
type Svc struct{ Backup func() }

// Do names a field as fallback.
//
//argo:retry fallback=Backup
func (s *Svc) Do(ctx context.Context) error { return nil }

// Variadic differs in variadicness from its fallback.
//
//argo:retry fallback=notVariadic
func Variadic(ctx context.Context, xs ...int) error { return nil }

func notVariadic(ctx context.Context, xs []int) error { return nil }

// GenericHook names a generic fallback.
//
//argo:retry fallback=genericFallback
func GenericHook(ctx context.Context, n int) error { return nil }

func genericFallback[T any](ctx context.Context, n int) error { return nil }

// Package errors has every user error argogen reports.
package errors

import "context"

// Keys has unknown, duplicate and badly valued keys.
//
//argo:retry retires=3 retries=abc backoff=quadratic delay=-1s jitter=200% mode=later thread=x name="" max-delay=soon timeout=1 fallback=1x retries=2
func Keys(ctx context.Context) error { return nil }

// Cross has keys that contradict each other.
//
//argo:retry backoff=fixed multiplier=3 first-delay=1s alert-action=pageOps
func Cross(ctx context.Context) error { return nil }

// SyncLater cannot be both.
//
//argo:retry mode=schedule thread=sync
func SyncLater(ctx context.Context) error { return nil }

// Syntax has an argument that is not key=value and a bad quote.
//
//argo:retry retries=3 oops alert="executeTimes
func Syntax(ctx context.Context) error { return nil }

// Alert has an expression that does not compile.
//
//argo:retry alert="executeTime >= 3"
func Alert(ctx context.Context) error { return nil }

// Dup1 and Dup2 share a task name.
//
//argo:retry name=shared
func Dup1(ctx context.Context) error { return nil }

// Dup2 shares the task name.
//
//argo:retry name=shared
func Dup2(ctx context.Context) error { return nil }

// Twice has two directives.
//
//argo:retry retries=1
//argo:retry retries=2
func Twice(ctx context.Context) error { return nil }

// Floating is not in a doc comment:

//argo:retry

// NotAFunc is a type.
//
//argo:retry
type NotAFunc int

// Other is an unknown directive.
//
//argo:other
func Other(ctx context.Context) error { return nil }

//argo:retry
func init() {}

// Keyed names parameters that do not fit.
//
//argo:retry shard-by=missing unique-by=p
func Keyed(ctx context.Context, p *int) error { return nil }

// CtxKey names the context.
//
//argo:retry shard-by=ctx
func CtxKey(ctx context.Context, n int) error { return nil }

// Collide collides with a hand-written CollideDurable.
//
//argo:retry
func Collide(ctx context.Context) error { return nil }

// CollideDurable is hand-written.
func CollideDurable() {}

// Stale calls a wrapper of a stale generated file: a tolerated type error.
func Stale(ctx context.Context) error { return KeysDurable(ctx) }

// Misspelled is an unknown argo directive close to retry.
//
//argo:retries
func Misspelled(ctx context.Context) error { return nil }

// Separated has a blank line between its directive and func.
//
//argo:retry

func Separated(ctx context.Context) error { return nil }

// handler is a variable.
//
//argo:retry
var handler = func(ctx context.Context) error { return nil }

// limit is a constant.
//
//argo:retry
const limit = 3

type (
	// Grouped is a type in a group.
	//
	//argo:retry
	Grouped int
)

// Literal wraps a func literal.
func Literal() func(context.Context) error {
	//argo:retry
	return func(ctx context.Context) error { return nil }
}

// Spaced has a space after //: a warning, reported with the errors.
//
// argo:retry
func Spaced(ctx context.Context) error { return nil }

// Tenanted names a tenant parameter that is not there.
//
//argo:retry tenant-by=missing
func Tenanted(ctx context.Context, p *int) error { return nil }

// TenantPtr names a pointer as the tenant.
//
//argo:retry tenant-by=p
func TenantPtr(ctx context.Context, p *int) error { return nil }

// TenantBad gives tenant-by something that is no parameter name.
//
//argo:retry tenant-by=a.b
func TenantBad(ctx context.Context, n int) error { return nil }

// OrderByMissing names no parameter of the function.
//
//argo:retry order-by=nope
func OrderByMissing(a int) error { return nil }

// OrderByFlow is ordered and under flow control.
//
//argo:retry order-by=a limit=2
func OrderByFlow(a int) error { return nil }

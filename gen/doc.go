// Package gen is argogen: it reads the //argo:retry directives of a Go
// package and writes one file (argo_gen.go) of typed durable wrappers built
// with jennifer. cmd/argogen is its command line; README.md ("The //argo:retry directive") is the
// user-facing reference.
//
// # The directive
//
// One line in the doc comment of a function or method, directly above func:
//
//	//argo:retry key=value key="quoted value" …
//
// Values are bare words or quoted Go strings (alert="executeTimes >= 3");
// every key is optional:
//
//	key           value                          default
//	name          task name (≤ 255 bytes)        "<import path>.<Func>" or "<import path>.<Type>.<Method>"
//	retries       N (retries after the first     3 (4 attempts)
//	              attempt) or unlimited
//	backoff       fixed | linear | exponential   exponential
//	delay         duration: the first retry's    1s
//	              delay (fixed: every delay;
//	              linear: n×delay)
//	multiplier    float ≥ 1 (exponential only)   2
//	max-delay     duration cap; 0 = no cap       1m
//	jitter        none | full | equal | N% |     10%
//	              +DURATION (deterministic per
//	              task and attempt)
//	mode          immediate | schedule           immediate
//	first-delay   duration (mode=schedule only)  0
//	thread        async | sync                   async
//	timeout       per-attempt duration           none
//	fallback      function or method name        none
//	alert         expr-lang boolean expression   none
//	alert-action  function or method name        none (requires alert)
//	shard-by      parameter name                 none (shard chosen at random)
//	unique-by     parameter name                 none
//	tenant-by     parameter name                 none (the tenant of the context, runtime.WithTenant)
//	order-by      parameter name: calls with     none (unordered)
//	              equal values run one at a
//	              time in submit order
//
// # Generated code
//
// For a function F: FDurable with F's parameters (stores the call, then
// runs it per the directive; no context parameter if F has none) and
// FDurableTx(ctx, tx runtime.Execer, …) (int64, error), which stores the
// call in the caller's transaction. For a method (r *T) M or (r T) M: the
// methods MDurable and MDurableTx on the same receiver kind; the receiver
// they are called on is not stored, the one bound at start-up runs.
// ArgoRegister(rt) registers the package's functions and
// ArgoRegister<T>(rt, recv) binds T's receiver and registers its methods;
// either binds rt for every wrapper of the package. Arguments are stored as
// a JSON object keyed by parameter name; a row whose keys differ from the
// current parameters is refused with runtime.Undecodable. A compile-time
// guard per function, fallback and alert action breaks the build when a
// signature drifts from the generated code.
//
// # Checks
//
// Every problem is reported as file:line:col: message, all in one run, and
// nothing is written: unknown, duplicate or badly valued keys, keys that
// contradict each other, alert expressions that do not compile against
// runtime.AlertEnv, duplicate task names, fallbacks and alert actions that do
// not exist or have the wrong signature, results other than error,
// parameters that cannot round-trip through encoding/json (channels,
// functions, unsafe.Pointer, interfaces, complex numbers, map keys without
// a text form, unexported struct fields not tagged json:"-", and anything
// containing them), generic functions and methods of generic types,
// directives not on a function, and generated names that collide with the
// package's own declarations.
//
// Comments that look like a misspelt directive but are none (a space after
// //, a case variant like //argo:Retry, a tool name within two edits of
// argo:retry, a block comment) generate nothing; they are reported as
// file:line:col: warning: message, saying what to write, and do not fail
// the run (Result.Warnings).
//
// The package is loaded with golang.org/x/tools/go/packages with its previous
// output overlaid by an empty file, so a stale generated file never blocks
// regeneration; type errors elsewhere in the package are tolerated.
package gen

package errors

import "context"

// FlowBad has badly valued flow keys.
//
//argo:retry limit=0 rate=fast burst=-1 breaker=5 cooldown=0s
func FlowBad(ctx context.Context) error { return nil }

// FlowGroups names two groups, an empty one, and keys needing another.
//
//argo:retry limit=a:2 rate=b:3/s breaker=:5/1s
func FlowGroups(ctx context.Context) error { return nil }

// FlowNeeds has a burst without a rate and a cool-down without a breaker.
//
//argo:retry burst=5 cooldown=5s
func FlowNeeds(ctx context.Context) error { return nil }

// FlowOne and FlowTwo declare one group with other values.
//
//argo:retry limit=shared:2
func FlowOne(ctx context.Context) error { return nil }

// FlowTwo declares the group with another limit.
//
//argo:retry limit=shared:3
func FlowTwo(ctx context.Context) error { return nil }

// FlowBudgetBad has a retry budget that is not a share of first attempts.
//
//argo:retry retry-budget=20/1m
func FlowBudgetBad(ctx context.Context) error { return nil }

// FlowBudgetOver asks for more retries than first attempts.
//
//argo:retry retry-budget=150%/1m
func FlowBudgetOver(ctx context.Context) error { return nil }

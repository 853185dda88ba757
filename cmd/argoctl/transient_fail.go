package main

import (
	"context"

	"github.com/argo-retry/argo/runtime"
)

// cmdTransientFail asks that each task's next attempt fail as transient
// without calling its function (seed 001's run?transient_fail=true),
// honoured by instances started with Config.FaultInjection.
func cmdTransientFail(e *env, args []string) error {
	return operatorAction(e, args, action{verb: "transient-fail", past: "next attempt fails as transient:", reasonNeeded: true,
		do: func(ctx context.Context, in *runtime.Inspector, id int64, reason string) (string, error) {
			return "on instances started with Config.FaultInjection", in.TransientFail(ctx, id, reason)
		}})
}

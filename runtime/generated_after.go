package runtime

import "context"

// SubmitJSONAfter is SubmitJSON for the generated …DurableAfter wrappers:
// the call runs after the tasks after (Call.After: written blocked until
// each has succeeded or recovered, skipped if one ends dead or discarded;
// docs/dependencies.md), with orderKey if its task has order-by= ("":
// none), and its task id is returned. No after is an ordinary Submit.
// Called by generated code.
func SubmitJSONAfter(ctx context.Context, rt *Runtime, register string, def *TaskDef, args any, shardBy, uniqueKey, orderKey string, after []int64) (int64, error) {
	call, err := encodeCall(rt, register, def, args, shardBy, uniqueKey)
	if err != nil {
		return 0, err
	}
	call.OrderKey, call.After = orderKey, after
	return rt.Submit(ctx, call)
}

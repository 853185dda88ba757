package runtime

import "context"

// SubmitJSONOrdered is SubmitJSON for a task with order-by=: the call
// carries orderKey (Call.OrderKey). Called by generated code.
func SubmitJSONOrdered(ctx context.Context, rt *Runtime, register string, def *TaskDef, args any, shardBy, uniqueKey, orderKey string) error {
	call, err := encodeCall(rt, register, def, args, shardBy, uniqueKey)
	if err != nil {
		return err
	}
	call.OrderKey = orderKey
	_, err = rt.Submit(ctx, call)
	return err
}

// SubmitJSONOrderedTx is SubmitJSONOrdered inside the caller's transaction
// (Runtime.SubmitTx). Called by generated code.
func SubmitJSONOrderedTx(ctx context.Context, rt *Runtime, tx Execer, register string, def *TaskDef, args any, shardBy, uniqueKey, orderKey string) (int64, error) {
	call, err := encodeCall(rt, register, def, args, shardBy, uniqueKey)
	if err != nil {
		return 0, err
	}
	call.OrderKey = orderKey
	return rt.SubmitTx(ctx, tx, call)
}

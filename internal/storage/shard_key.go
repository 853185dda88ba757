package storage

// RowKey names one row of argo_task as a sharding proxy routes a statement
// to it: its id and its shard_key (docs/deployment.md, "Vitess and
// ShardingSphere"). A statement by n rows takes the n ids, then the n shard
// keys (RowKeyArgs), and names both: id IN (…) AND shard_key IN (…).
type RowKey struct {
	ID    int64 `db:"id"`
	Shard int   `db:"shard_key"`
}

// KeyOf is the RowKey of a task.
func KeyOf(t *Task) RowKey { return RowKey{ID: t.ID, Shard: t.ShardKey} }

// RowKeyArgs are the arguments of a statement by n rows: the n ids, then
// the n shard keys.
func RowKeyArgs(keys []RowKey) []any {
	out := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		out = append(out, k.ID)
	}
	for _, k := range keys {
		out = append(out, k.Shard)
	}
	return out
}

// shardArgs are the shard keys of tasks, in their order: the "n shard keys"
// a statement by n ids names beside them.
func shardArgs(tasks []*Task) []any {
	out := make([]any, len(tasks))
	for i, t := range tasks {
		out[i] = t.ShardKey
	}
	return out
}

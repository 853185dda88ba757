package runtime

// othersOwnShards reports whether another live instance owns some of the
// shards of names: only then may a steal (Config.StealAfter) find a due
// task that this instance's own claim did not. An instance alone in the
// split for names (their scope lists no shards: every shard is its own)
// has just claimed from every shard, oldest due first, and found fewer due
// tasks than it had workers for; a steal would read the same rows again
// with a stricter due time (issue #23: +1 statement and round trip per
// claim that did not fill every free worker, i.e. per claim of one task).
func (rt *Runtime) othersOwnShards(names []string) bool {
	for _, g := range rt.shards.claimScope(names) {
		if g.Shards != nil {
			return true
		}
	}
	return false
}

package sqlitedriver

import "github.com/argo-retry/argo/internal/storage"

// GroupCommit groups concurrent submits: every SQLite write is a
// transaction of its own behind the file's write lock, with one fsync
// (synchronous=FULL), so submits written together share one. A transaction
// of single-row INSERTs (storage.Store's default) rather than one multi-row
// INSERT: each row's own id and its own refusal come from its own
// statement, and the statements cost little beside the fsync
// (docs/performance.md has the figures).
func (d *Driver) GroupCommit() storage.GroupCommitPolicy {
	return storage.GroupCommitPolicy{MaxBatch: storage.GroupCommitBatchDefault}
}

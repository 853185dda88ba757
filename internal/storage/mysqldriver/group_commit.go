package mysqldriver

import "github.com/argo-retry/argo/internal/storage"

// GroupCommit groups concurrent submits when GroupSubmits is on.
func (d *Driver) GroupCommit() storage.GroupCommitPolicy {
	return storage.GroupCommitPolicy{MaxBatch: storage.GroupCommitBatchDefault}
}

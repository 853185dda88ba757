package runtime

import "github.com/argo-retry/argo/internal/storage"

// The store's types under the names the runtime uses for them.
type (
	finishing  = storage.Finishing
	fence      = storage.Fence
	heldStart  = storage.HeldStart
	leaseKey   = storage.LeaseKey
	claimGroup = storage.ClaimGroup
)

// taskColumns is the column list of argo_task in Task's field order.
const taskColumns = storage.TaskColumns

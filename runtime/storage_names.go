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

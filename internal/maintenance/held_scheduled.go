package maintenance

import (
	"time"

	"github.com/argo-retry/argo/internal/storage"
)

// Held scheduled calls. A scheduled call (pending, its first attempt not
// yet run) about to fall due is held like a retry: the poller of the
// instance that owns its shard leases it until due + LeaseDuration
// (storage.Store.HoldScheduled) and queues it here, and the same timer
// starts it at its due time with the same fenced UPDATE (still pending,
// same owner, attempt and hold). Stop gives it back; after a crash the
// hold runs out and any instance claims it.

// HoldScheduled queues a scheduled call held for this instance (t as
// HoldScheduled returned it: pending, leased by Owner until its hold), due
// at the local time due. After Stop the hold is given back at once
// instead. The caller bounds what it holds with Room.
func (hs *HeldRetries[H]) HoldScheduled(t *storage.Task, h H, due time.Time) {
	c := *t // the caller keeps its own
	e := &heldRetry[H]{t: &c, h: h, due: due, start: storage.HeldStart{ID: c.ID, Shard: c.ShardKey, Attempt: c.ExecuteTimes, HoldUntil: c.LeaseUntil, Scheduled: true}}
	hs.enqueue(e)
}

// Room returns how many more holds fit (MaxHeld minus those queued); zero
// when holding is disabled (Hold zero or less).
func (hs *HeldRetries[H]) Room() int {
	if hs.cfg.Hold <= 0 {
		return 0
	}
	return max(0, hs.cfg.MaxHeld-int(hs.n.Load()))
}

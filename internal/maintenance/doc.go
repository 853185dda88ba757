// Package maintenance is the runtime's background work, one service per
// file: the completer (batched outcome writes), the held retries (local
// timers that start retries due soon), the heartbeater (this instance's
// row, the live instances, the clock reading that rides on it), the leader
// elector (the "maintenance" role), and, on the instance holding that role,
// the rescuer (expired leases), the orphan flagger (due tasks no live
// instance runs), the purger (retention) and the blocked sweeper
// (dependent tasks whose release was lost).
//
// Each service is a type with Start and Stop. It gets what it needs
// explicitly: the storage operations it runs (a narrow interface that
// *storage.Store satisfies), a clock func returning the database clock's
// time, a logger, its configuration (zero values take the named defaults),
// and callbacks for what it hands back to the runtime. No service knows the
// runtime. Start runs the service until Stop, or until Start's context
// ends; Stop waits for its goroutines within Stop's context. Both are safe
// to call more than once; a stopped service does not start again. The
// services that run a pass on a tick (the rescuer, the orphan flagger, the
// purger, the blocked sweeper) embed one runner, periodic, which gives
// them Start, Stop and Wake; lifecycle is what every service's Start and
// Stop are built on.
package maintenance

package runtime

import (
	"context"
	"hash/fnv"
	"slices"
	"sync"
	"time"
)

// shardView is this instance's share of the shard space. Live instances
// (heartbeats in argo_instance) split the shards by rendezvous hashing: shard
// s belongs to the live instance with the highest hash(instance, s). Every
// instance computes the same split from the same list, with no coordinator;
// when one joins or leaves, only its shards move. Correctness never depends
// on the split (leases and fenced writes do that): it keeps instances from
// contending for the same rows.
type shardView struct {
	mu    sync.RWMutex
	owned []int // nil: all shards (alone, or membership not known)
	live  []string
}

func (v *shardView) start(ctx context.Context, rt *Runtime) error {
	if err := rt.heartbeat(ctx); err != nil {
		return err
	}
	return nil
}

func (v *shardView) stop(rt *Runtime) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Leave at once so the others take our shards without waiting for the timeout.
	if _, err := rt.store.exec(ctx, "DELETE FROM argo_instance WHERE instance_id = ?", rt.cfg.InstanceID); err != nil {
		rt.log.Warn("argo: could not remove this instance from argo_instance; it will time out", "error", err)
	}
}

// ownedShards returns the shards to claim from, nil meaning all.
func (v *shardView) ownedShards() []int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.owned
}

// Live returns the instances in the last shard split.
func (v *shardView) liveInstances() []string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return slices.Clone(v.live)
}

// heartbeat records this instance and recomputes its shards.
func (rt *Runtime) heartbeat(ctx context.Context) error {
	now := toMillis(rt.cfg.Now())
	n, err := rt.store.exec(ctx, "UPDATE argo_instance SET heartbeat_at = ? WHERE instance_id = ?", now, rt.cfg.InstanceID)
	if err != nil {
		return err
	}
	if n == 0 {
		if _, err := rt.store.exec(ctx, "INSERT INTO argo_instance (instance_id, heartbeat_at, started_at) VALUES (?, ?, ?)", rt.cfg.InstanceID, now, now); err != nil && !isDuplicate(err) {
			return err
		}
	}
	var live []string
	if err := rt.store.db.SelectContext(ctx, &live, "SELECT instance_id FROM argo_instance WHERE heartbeat_at >= ? ORDER BY instance_id", now-Millis(rt.cfg.InstanceTimeout.Milliseconds())); err != nil {
		return err
	}
	if !slices.Contains(live, rt.cfg.InstanceID) {
		live = append(live, rt.cfg.InstanceID)
		slices.Sort(live)
	}
	owned := splitShards(live, rt.cfg.InstanceID, rt.cfg.Shards)
	v := &rt.shards
	v.mu.Lock()
	changed := !slices.Equal(v.live, live)
	v.live = live
	if len(live) == 1 {
		v.owned = nil
	} else {
		v.owned = owned
	}
	v.mu.Unlock()
	if changed {
		rt.log.Info("argo: shard split changed", "instance", rt.cfg.InstanceID, "live_instances", len(live), "owned_shards", len(owned))
		rt.poke()
	}
	return nil
}

// splitShards returns the shards of [0, n) that self owns among live.
func splitShards(live []string, self string, n int) []int {
	owned := []int{}
	for s := range n {
		if shardOwner(live, s) == self {
			owned = append(owned, s)
		}
	}
	return owned
}

// shardOwner is the rendezvous-hashing winner for shard s.
func shardOwner(live []string, s int) string {
	var best string
	var bestScore uint64
	for _, id := range live {
		h := fnv.New64a()
		h.Write([]byte(id))
		h.Write([]byte{byte(s), byte(s >> 8), byte(s >> 16), byte(s >> 24)})
		score := mix64(h.Sum64())
		if best == "" || score > bestScore || (score == bestScore && id < best) {
			best, bestScore = id, score
		}
	}
	return best
}

func mix64(x uint64) uint64 {
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

// leader tries to hold the named role (one instance at a time, chosen
// through argo_leader) for ttl, and reports whether it does.
func (rt *Runtime) leader(ctx context.Context, name string, ttl time.Duration) (bool, error) {
	now := rt.cfg.Now()
	n, err := rt.store.exec(ctx, "UPDATE argo_leader SET holder = ?, expires_at = ? WHERE name = ? AND (holder = ? OR expires_at < ?)",
		rt.cfg.InstanceID, toMillis(now.Add(ttl)), name, rt.cfg.InstanceID, toMillis(now))
	if err != nil {
		return false, err
	}
	if n > 0 {
		return true, nil
	}
	_, err = rt.store.exec(ctx, "INSERT INTO argo_leader (name, holder, expires_at) VALUES (?, ?, ?)", name, rt.cfg.InstanceID, toMillis(now.Add(ttl)))
	if err == nil {
		return true, nil
	}
	if isDuplicate(err) {
		return false, nil
	}
	return false, err
}

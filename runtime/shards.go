package runtime

import (
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/argo-retry/argo/internal/storage"
)

// shardView is this instance's share of the work. Live instances
// (heartbeats in argo_instance, with the task names each has handlers for)
// split the shard space by rendezvous hashing: for each task name, shard s
// belongs to the live instance, among those that can run that name, with the
// highest hash(instance, s). Every instance computes the same split from the
// same rows, with no coordinator; when one joins or leaves, only its shards
// move. An instance without a handler for a name owns none of its shards, so
// a producer-only instance never holds work back. Correctness never depends
// on the split (leases and fenced writes do that): it keeps instances from
// contending for the same rows, and Config.StealAfter lets an idle instance
// take tasks left overdue in another's shards.
type shardView struct {
	mu     sync.RWMutex
	groups []claimGroup // what to claim; nil until the first heartbeat
	live   []string
}

// claimScope returns the groups to claim from, for the registered names.
// Names registered since the last heartbeat are claimed in all shards until
// the next one computes their split.
func (v *shardView) claimScope(names []string) []claimGroup {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var out []claimGroup
	seen := map[string]bool{}
	for _, g := range v.groups {
		var keep []string
		for _, n := range g.Names {
			if slices.Contains(names, n) {
				keep = append(keep, n)
				seen[n] = true
			}
		}
		if len(keep) > 0 {
			out = append(out, claimGroup{Names: keep, Shards: g.Shards})
		}
	}
	var fresh []string
	for _, n := range names {
		if !seen[n] {
			fresh = append(fresh, n)
		}
	}
	if len(fresh) > 0 {
		out = append(out, claimGroup{Names: fresh})
	}
	return out
}

// ownedShards returns the shards this instance owns for the largest group
// of its task names (all of them when every instance runs the same code),
// nil meaning all shards.
func (v *shardView) ownedShards() []int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	best := -1
	for i, g := range v.groups {
		if best < 0 || len(g.Names) > len(v.groups[best].Names) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	return v.groups[best].Shards
}

// liveInstances returns the instances in the last shard split.
func (v *shardView) liveInstances() []string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return slices.Clone(v.live)
}

// updateShards recomputes this instance's shards from a heartbeat's
// result (maintenance.Heartbeater): mine, the names it wrote, and rows, the
// live instances.
func (rt *Runtime) updateShards(mine []string, rows []storage.Instance) {
	holders := map[string][]string{} // my task name → live instances that run it
	var live []string
	for _, r := range rows {
		names := r.Names
		if r.ID == rt.cfg.InstanceID {
			names = mine // what this instance runs now, not what it wrote
		}
		live = append(live, r.ID)
		if r.ID != rt.cfg.InstanceID && !sameTenants(r.Tenants, rt.cfg.Tenants) {
			continue // limited to other tenants: no holder of my shards (instance_scope.go)
		}
		for _, n := range names {
			if slices.Contains(mine, n) {
				holders[n] = append(holders[n], r.ID)
			}
		}
	}
	if !slices.Contains(live, rt.cfg.InstanceID) {
		live = append(live, rt.cfg.InstanceID)
		slices.Sort(live)
	}
	byHolders := map[string]*claimGroup{}
	var keys []string
	for _, n := range mine {
		hs := holders[n]
		if !slices.Contains(hs, rt.cfg.InstanceID) {
			hs = append(hs, rt.cfg.InstanceID)
			slices.Sort(hs)
		}
		key := strings.Join(hs, "\n")
		g := byHolders[key]
		if g == nil {
			g = &claimGroup{}
			if len(hs) > 1 {
				g.Shards = splitShards(hs, rt.cfg.InstanceID, rt.cfg.Shards)
			}
			byHolders[key] = g
			keys = append(keys, key)
		}
		g.Names = append(g.Names, n)
	}
	groups := make([]claimGroup, 0, len(keys))
	for _, k := range keys {
		groups = append(groups, *byHolders[k])
	}
	v := &rt.shards
	before := v.ownedShards()
	v.mu.Lock()
	liveChanged := !slices.Equal(v.live, live)
	changed := liveChanged || !equalGroups(v.groups, groups)
	v.live, v.groups = live, groups
	v.mu.Unlock()
	if changed {
		// Logged when instances come or go or this one's shards move; a
		// newly registered name alone is no news.
		if owned := v.ownedShards(); liveChanged || !slices.Equal(before, owned) || (before == nil) != (owned == nil) {
			rt.log.Info("argo: shard split changed", "instance", rt.cfg.InstanceID, "live_instances", len(live), "owned_shards", describeOwned(owned, rt.cfg.Shards))
		}
		rt.poke()
	}
}

// describeOwned says which part of the shard space owned is, for the log:
// "all" (nil: no other live instance runs these names), or "12 of 64".
func describeOwned(owned []int, shards int) string {
	if owned == nil {
		return "all"
	}
	return strconv.Itoa(len(owned)) + " of " + strconv.Itoa(shards)
}

func equalGroups(a, b []claimGroup) bool {
	return slices.EqualFunc(a, b, func(x, y claimGroup) bool {
		return slices.Equal(x.Names, y.Names) && slices.Equal(x.Shards, y.Shards) && (x.Shards == nil) == (y.Shards == nil)
	})
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

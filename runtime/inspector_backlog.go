package runtime

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/argo-retry/argo/argotype"
)

// Backlog is the work waiting for a worker (argotype.Backlog).
type Backlog = argotype.Backlog

// BacklogLine is the backlog of one task name, tenant or flow group.
type BacklogLine = argotype.BacklogLine

// BacklogOther names the line that sums the names beyond the top N.
const BacklogOther = argotype.BacklogOther

// DefaultBacklogTop is how many task names, tenants and flow groups
// Backlog lists before it sums the rest in one BacklogOther line.
const DefaultBacklogTop = 20

// Backlog reads the tasks due now, the age of the oldest and the held
// retries, in total and per task name, tenant and flow group, the
// DefaultBacklogTop of each with the most tasks due (BacklogTop for
// another number). It reads the database with four statements on indexes
// (docs/backlog.md): call it once per scrape or interval, not per task.
func (in *Inspector) Backlog(ctx context.Context) (*Backlog, error) {
	return in.BacklogTop(ctx, DefaultBacklogTop)
}

// BacklogTop is Backlog listing the top task names, tenants and flow
// groups (at least 1; a smaller top is taken as 1).
func (in *Inspector) BacklogTop(ctx context.Context, top int) (*Backlog, error) {
	top = max(top, 1)
	now := in.now()
	read, err := in.store.Backlog(ctx, now, top)
	if err != nil {
		return nil, err
	}
	groups, err := in.store.FlowGroups(ctx)
	if err != nil {
		return nil, err
	}
	tasks := map[string]*BacklogLine{}
	line := func(m map[string]*BacklogLine, name string) *BacklogLine {
		l := m[name]
		if l == nil {
			l = &BacklogLine{Name: name}
			m[name] = l
		}
		return l
	}
	total := BacklogLine{}
	for _, r := range read.ByTask {
		l := line(tasks, r.Name)
		l.Due = r.N
		l.OldestDue = r.Oldest.Time()
		addDue(&total, l.Due, l.OldestDue)
	}
	tenants := map[string]*BacklogLine{}
	for _, r := range read.ByTenant {
		l := line(tenants, r.Name)
		l.Due = r.N
		l.OldestDue = r.Oldest.Time()
	}
	for _, h := range read.Held {
		line(tasks, h.Task).Held += h.N
		line(tenants, h.Tenant).Held += h.N
		total.Held += h.N
	}
	byGroup := map[string]*BacklogLine{}
	for _, g := range groups {
		for _, member := range g.MemberNames() {
			if t := tasks[member]; t != nil {
				l := line(byGroup, g.Group)
				addDue(l, t.Due, t.OldestDue)
				l.Held += t.Held
			}
		}
	}
	out := &Backlog{At: now, Total: total}
	out.Total.OldestAge = ageAt(now, total.OldestDue)
	out.ByTask = topBacklog(tasks, top, now, total, false)
	out.ByTenant = topBacklog(tenants, top, now, total, read.TenantsCut)
	out.ByGroup = topBacklog(byGroup, top, now, BacklogLine{}, false)
	return out, nil
}

// addDue adds n tasks due, the earliest at oldest, to l.
func addDue(l *BacklogLine, n int, oldest time.Time) {
	if n == 0 {
		return
	}
	if l.Due == 0 || oldest.Before(l.OldestDue) {
		l.OldestDue = oldest
	}
	l.Due += n
}

func ageAt(now, oldest time.Time) time.Duration {
	if oldest.IsZero() {
		return 0
	}
	return max(now.Sub(oldest), 0)
}

// topBacklog sorts the lines (most due, then most held, then by name) and
// keeps the top; the rest are summed in a BacklogOther line. With cut (the
// database listed only the top tenants), the BacklogOther line is total
// less the listed lines, aged by the oldest due task of all.
func topBacklog(m map[string]*BacklogLine, top int, now time.Time, total BacklogLine, cut bool) []BacklogLine {
	lines := make([]BacklogLine, 0, len(m))
	for _, l := range m {
		lines = append(lines, *l)
	}
	slices.SortFunc(lines, func(a, b BacklogLine) int {
		return cmp.Or(cmp.Compare(b.Due, a.Due), cmp.Compare(b.Held, a.Held), cmp.Compare(a.Name, b.Name))
	})
	var other BacklogLine
	if len(lines) > top {
		for _, l := range lines[top:] {
			addDue(&other, l.Due, l.OldestDue)
			other.Held += l.Held
		}
		lines = lines[:top]
	}
	if cut {
		listed := 0
		for _, l := range lines {
			listed += l.Due
		}
		other.Due = total.Due - listed
		other.OldestDue = total.OldestDue
	}
	if other.Due > 0 || other.Held > 0 {
		other.Name, other.Other = argotype.BacklogOther, true
		if other.Due == 0 {
			other.OldestDue = time.Time{}
		}
		lines = append(lines, other)
	}
	for i := range lines {
		lines[i].OldestAge = ageAt(now, lines[i].OldestDue)
	}
	return lines
}

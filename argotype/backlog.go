package argotype

import "time"

// BacklogOther names the line that sums the task names, tenants or flow
// groups beyond a Backlog's top N (parenthesised so that it cannot be
// mistaken for a task name or tenant "other").
const BacklogOther = "(other)"

// Backlog is the work waiting for a worker, read by Inspector.Backlog and
// exported by the metrics package as the argo_backlog_* gauges: a signal to
// scale workers on (docs/backlog.md).
type Backlog struct {
	// At is when it was read (the Inspector's clock).
	At time.Time
	// Total sums every task due and every held retry (Name "").
	Total BacklogLine
	// ByTask, ByTenant and ByGroup: the task names, tenants ("" for tasks
	// without one) and flow groups with a task due or a retry held, the
	// most due first, at most the top N of each; the others are summed in
	// one last line named BacklogOther (Other set). A flow group sums its
	// member task names; task names in no group are in no group line.
	ByTask, ByTenant, ByGroup []BacklogLine
}

// BacklogLine is the backlog of one task name, tenant or flow group.
type BacklogLine struct {
	Name string
	// Other is set on the line that sums the names beyond the top N.
	Other bool
	// Due counts the tasks a worker could start now: pending, retrying or
	// exhausted (a fallback to run), due at or before At. Tasks held back
	// by flow control, or by an order key's earlier task, are counted (they
	// wait for capacity too); blocked tasks (waiting for their
	// dependencies) are not.
	Due int
	// OldestDue is the due time of the earliest of them (zero when Due is
	// 0), and OldestAge is At minus it (0 when Due is 0). On the
	// BacklogOther line of tenants, when more tenants had tasks due than
	// were read, it is the oldest due task of all (exact if that task's
	// tenant is not listed, else an upper bound of the age).
	OldestDue time.Time
	OldestAge time.Duration
	// Held counts the retries held by an instance: retrying, kept leased
	// by the instance that ran the failed attempt, which starts them at
	// their due time without a claim (docs/design.md, "Held retries").
	// A held retry due by At is in Due too until its instance starts it.
	Held int
}
